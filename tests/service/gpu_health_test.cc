// A server on several GPUs (issue 19) says which of them serve: health has a service per GPU
// ("gpusort.v1.SortService/cuda:1"), and /metrics gpusort_device_serving{device} and, per GPU,
// gpusort_device_requests_total{device}. When one GPU is lost (a sticky CUDA error), the server serves on
// from the others: the whole server stays SERVING and only that GPU's service turns NOT_SERVING. Stand-in
// GPU engines (tests/support/stand_in_gpu.h) under the real router and set of GPUs, so this runs anywhere;
// tests/gpu/multi_gpu_test.cc loses a real GPU on the two-GPU machine.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "server/backend/auto_router.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/backend/gpu_set.h"
#include "tests/service/health_check.h"
#include "tests/service/http_get.h"
#include "tests/service/rpc_calls.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"
#include "tests/support/stand_in_gpu.h"

namespace gpusort::testing {
namespace {

struct TwoGpuServer {
  TwoGpuServer() : server(Config(), Backend()) {}

  static ServerConfig Config() {
    ServerConfig config = LoopbackConfig();
    config.metrics_listen = "127.0.0.1:0";
    return config;
  }
  std::unique_ptr<gpusort::Backend> Backend() {
    std::vector<GpuSetMember> members;
    for (int g = 0; g < 2; ++g) {
      auto engine = std::make_unique<StandInGpu>(g, std::size_t{1} << 24);
      gpus.push_back(engine->state());
      members.push_back({.ordinal = g, .engine = std::move(engine)});
    }
    return MakeAutoRouter(MakeCpuBackend(), MakeGpuSet(std::move(members), {}));
  }

  std::vector<std::shared_ptr<StandInGpu::State>> gpus;
  TestServer server;
};

CallResult RadixSort(TestServer& server, const std::vector<uint32_t>& keys) {
  v1::SortRequest request;
  request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  request.mutable_options()->set_algorithm(v1::ALGORITHM_RADIX);  // a GPU's, whatever the size
  request.set_keys(ToBytes(keys));
  return CallSort(server.stub(), request);
}

TEST(GpuHealth, EachGpuHasItsOwnHealthAndALostOneLeavesTheServerServing) {
  TwoGpuServer two;
  TestServer& server = two.server;
  const std::string service = "gpusort.v1.SortService";
  EXPECT_EQ(CheckHealth(server.channel(), service + "/cuda:0"), HealthStatus::SERVING);
  EXPECT_EQ(CheckHealth(server.channel(), service + "/cuda:1"), HealthStatus::SERVING);

  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 1000, 3);
  std::vector<uint32_t> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  // Idle GPUs take turns: two requests, one on each.
  for (int i = 0; i < 2; ++i) {
    const CallResult call = RadixSort(server, keys);
    ASSERT_TRUE(call.status.ok()) << call.status.error_message();
    EXPECT_EQ(FromBytes<uint32_t>(call.keys), sorted);
  }
  EXPECT_EQ(two.gpus[0]->calls.load(), 1);
  EXPECT_EQ(two.gpus[1]->calls.load(), 1);

  two.gpus[1]->lost = true;  // as a sticky CUDA error on GPU 1
  for (int i = 0; i < 4; ++i) {
    const CallResult call = RadixSort(server, keys);
    ASSERT_TRUE(call.status.ok()) << call.status.error_message();
    EXPECT_EQ(FromBytes<uint32_t>(call.keys), sorted);
    EXPECT_THAT(call.info.device(), ::testing::StartsWith("cuda:0 "));
  }
  EXPECT_EQ(CheckHealth(server.channel(), ""), HealthStatus::SERVING);
  EXPECT_EQ(CheckHealth(server.channel(), service), HealthStatus::SERVING);
  EXPECT_EQ(CheckHealth(server.channel(), service + "/cuda:0"), HealthStatus::SERVING);
  EXPECT_EQ(CheckHealth(server.channel(), service + "/cuda:1"), HealthStatus::NOT_SERVING);

  const std::string metrics = HttpGet(server.server().metrics_port(), "/metrics");
  EXPECT_EQ(MetricValue(metrics, "gpusort_device_serving{device=\"cuda:0\"}"), 1) << metrics;
  EXPECT_EQ(MetricValue(metrics, "gpusort_device_serving{device=\"cuda:1\"}"), 0);
  EXPECT_EQ(MetricValue(metrics, "gpusort_device_requests_total{device=\"cuda:0\"}"), 5);
  EXPECT_EQ(MetricValue(metrics, "gpusort_device_requests_total{device=\"cuda:1\"}"), 1);

  // The last GPU lost: the server stops serving, as a server on one GPU does.
  two.gpus[0]->lost = true;
  const CallResult refused = RadixSort(server, keys);
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.status.error_message();
  EXPECT_THAT(refused.status.error_message(), ::testing::HasSubstr("every GPU failed"));
  EXPECT_EQ(CheckHealth(server.channel(), service), HealthStatus::NOT_SERVING);
  EXPECT_EQ(CheckHealth(server.channel(), service + "/cuda:0"), HealthStatus::NOT_SERVING);
}

}  // namespace
}  // namespace gpusort::testing
