// --health-listen: a second, plaintext port that serves grpc.health.v1.Health and nothing else (no
// reflection, no SortService), in step with the main port's health through a drain.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

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

// A TCP connection to the health port, `bytes` sent on it; how long the server took to close it (or
// 20 s when it did not).
std::chrono::milliseconds TimeUntilClosed(int port, const std::string& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const auto start = std::chrono::steady_clock::now();
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 && !bytes.empty()) {
    (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  char buffer[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20000) != 1) break;
    if (::recv(fd, buffer, sizeof(buffer), 0) <= 0) break;  // GOAWAY and SETTINGS frames come first
  }
  ::close(fd);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
}

// Issue 41's second attack session: 8 idle connections filled the health port's share at a limit of 256,
// and gRPC kept each for its 120 s handshake timeout. A probe connects, asks and goes; a connection that
// sends nothing is closed after 2 s, one that only opened HTTP/2 after 5 s without a call.
TEST(HealthListener, SilentConnectionsAreClosedSoon) {
  ServerConfig config = LoopbackConfig();
  config.health_listen = "127.0.0.1:0";
  TestServer server(config);
  const int port = server.server().health_port();
  EXPECT_LT(TimeUntilClosed(port, ""), std::chrono::seconds(5));
  const std::string preface = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string("\0\0\0\4\0\0\0\0\0", 9);
  const auto idle = TimeUntilClosed(port, preface);
  EXPECT_GT(idle, std::chrono::seconds(3)) << "closed before its idle time";
  EXPECT_LT(idle, std::chrono::seconds(10));
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
