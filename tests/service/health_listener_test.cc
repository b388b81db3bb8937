// --health-listen: a second, plaintext port that serves grpc.health.v1.Health and nothing else (no
// reflection, no SortService), in step with the main port's health through a drain.
#include <grpcpp/support/sync_stream.h>

#include "tests/service/health_check.h"
#include "tests/service/reflection_probe.pb.h"
#include "tests/service/test_server.h"

namespace gpusort::testing {
namespace {

// The first answer of a reflection stream's list_services, or its failure.
grpc::Status ListServices(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  std::unique_ptr<grpc::ClientReaderWriter<test::ReflectionRequest, test::ReflectionResponse>> stream(
      grpc::internal::ClientReaderWriterFactory<test::ReflectionRequest, test::ReflectionResponse>::Create(
          channel.get(),
          grpc::internal::RpcMethod("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                    grpc::internal::RpcMethod::BIDI_STREAMING),
          &context));
  test::ReflectionRequest request;
  request.set_list_services("");
  stream->Write(request);
  stream->WritesDone();
  test::ReflectionResponse response;
  while (stream->Read(&response)) {
  }
  return stream->Finish();
}

TEST(HealthListener, ServesHealthOnlyAndFollowsTheDrain) {
  ServerConfig config = LoopbackConfig();
  config.health_listen = "127.0.0.1:0";
  TestServer server(config);
  ASSERT_GT(server.server().health_port(), 0);
  ASSERT_NE(server.server().health_port(), server.server().grpc_port());
  auto health = grpc::CreateChannel("127.0.0.1:" + std::to_string(server.server().health_port()),
                                    grpc::InsecureChannelCredentials());
  HealthStatus::ServingStatus status;
  ASSERT_TRUE(CheckHealth(health, "", &status).ok());
  EXPECT_EQ(status, HealthStatus::SERVING);
  ASSERT_TRUE(CheckHealth(health, "gpusort.v1.SortService", &status).ok());
  EXPECT_EQ(status, HealthStatus::SERVING);

  EXPECT_TRUE(ListServices(server.channel()).ok());  // the main port has reflection
  EXPECT_EQ(ListServices(health).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  v1::SortRequest request;
  v1::SortResponse response;
  grpc::ClientContext context;
  const grpc::Status sort = v1::SortService::NewStub(health)->Sort(&context, request, &response);
  EXPECT_EQ(sort.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_NE(sort.error_message().find("--health-listen"), std::string::npos) << sort.error_message();

  EXPECT_TRUE(server.server().Drain());
  // Both ports stop: Check fails or says NOT_SERVING, never SERVING.
  for (const auto& channel : {server.channel(), health}) {
    const grpc::Status s = CheckHealth(channel, "gpusort.v1.SortService", &status);
    EXPECT_TRUE(!s.ok() || status != HealthStatus::SERVING);
  }
}

TEST(HealthListener, AnAddressItCannotListenOnStopsTheStart) {
  ServerConfig config = LoopbackConfig();
  config.health_listen = "192.0.2.1:0";  // TEST-NET-1: no interface of this host has it
  auto started = GpusortServer::Start(config, MakeCpuBackend());
  EXPECT_FALSE(started.ok());
  EXPECT_NE(std::string(started.status().message()).find("health"), std::string::npos) << started.status();
}

}  // namespace
}  // namespace gpusort::testing
