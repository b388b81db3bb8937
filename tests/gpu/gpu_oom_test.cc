// Faults the server must survive on a real GPU (issue 14). The device's memory really exhausted: plain
// cudaMalloc takes all but 256 MiB of the card (kernels/testing/faults.h), as another process would;
// then every path of a large request (unary Sort and TopK, SortStream as it arrives, SortStream in
// parts, TopKStream) must answer RESOURCE_EXHAUSTED saying that the GPU has no room
// (never INTERNAL, never a crash), health must stay SERVING, and /metrics must show the device full;
// once the memory is back, the same requests must be answered, and correctly. And a failed CUDA call
// that is not sticky must leave nothing behind for the next one.
//
// Takes most of the GPU: run it alone (ctest: RUN_SERIAL). Skips without a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpusort/kernels/key_transform.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"
#include "kernels/testing/faults.h"
#include "server/backend/cuda_backend.h"
#include "tests/service/health_check.h"
#include "tests/service/http_get.h"
#include "tests/service/rpc_calls.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"

namespace gpusort::testing {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr std::size_t kMiB = std::size_t{1} << 20;
// What the hog leaves free: room for the driver's own needs (the kernels are loaded by then).
constexpr std::size_t kLeaveFree = 256 * kMiB;
// 96M uint32 keys, 384 MiB: every path needs more device memory than kLeaveFree for them (a unary Sort
// twice the keys and CUB's temp storage, the stream's buffer 512 MiB once grown, a parted Sort's buffer
// 384 MiB, a TopK by sorting four arrays of positions and keys).
constexpr std::size_t kKeys = std::size_t{96} << 20;
constexpr std::size_t kStreamChunk = 4 * kMiB;
constexpr uint64_t kTopK = 1000;

struct Reference {
  std::vector<uint32_t> keys;
  std::string bytes;
  std::vector<uint32_t> sorted;
};

const Reference& Ref() {
  static const Reference* ref = [] {
    auto* r = new Reference;
    r->keys = MakeInput<uint32_t>(Pattern::kRandom, kKeys, 14);
    r->bytes = ToBytes(r->keys);
    r->sorted = r->keys;
    std::sort(r->sorted.begin(), r->sorted.end());
    return r;
  }();
  return *ref;
}

ServerConfig Config() {
  ServerConfig config = LoopbackConfig();
  config.backend = "cuda";
  config.metrics_listen = "127.0.0.1:0";
  config.max_message_bytes = 512 * kMiB;  // the unary calls carry the 384 MiB arrays
  return config;
}

// A server on its own CUDA backend; null (and the test skipped) without a GPU.
std::unique_ptr<TestServer> StartServer(const ServerConfig& config) {
  auto backend = MakeCudaBackend({});
  if (!backend.ok()) return nullptr;
  return std::make_unique<TestServer>(config, std::move(*backend));
}

#define START_OR_SKIP(server, config)                              \
  std::unique_ptr<TestServer> server = StartServer(config);        \
  if (server == nullptr) GTEST_SKIP() << "no usable GPU";          \
  ASSERT_TRUE(kernels::UseDevice(0).ok())

// ---- the requests, and what their answers must be

v1::SortRequest UnarySort(v1::Algorithm algorithm) {
  v1::SortRequest request;
  request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  request.mutable_options()->set_algorithm(algorithm);
  request.set_keys(Ref().bytes);
  return request;
}

v1::TopKOptions TopKOptions() {
  v1::TopKOptions options;
  options.set_dtype(v1::DTYPE_UINT32);
  options.set_k(kTopK);
  options.set_largest(true);
  options.set_sorted(true);
  options.set_algorithm(v1::ALGORITHM_RADIX);  // the GPU's sort-based top-k (AUTO takes k = 1000 on the CPU)
  return options;
}

v1::SortStreamRequest StreamFirst() {
  v1::SortStreamRequest first;
  first.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  first.mutable_options()->set_algorithm(v1::ALGORITHM_RADIX);
  return first;
}

struct Answers {
  CallResult sort, topk, sort_stream, topk_stream;
  CallResult parts[2];  // one Sort in two SortStream parts
};

Answers SendAll(TestServer& server) {
  Answers a;
  v1::SortService::Stub& stub = server.stub();
  a.sort = CallSort(stub, UnarySort(v1::ALGORITHM_RADIX));
  v1::TopKRequest topk;
  *topk.mutable_options() = TopKOptions();
  topk.set_keys(Ref().bytes);
  a.topk = CallTopK(stub, topk);
  a.sort_stream = CallSortStream(stub, StreamFirst(), Ref().bytes, kStreamChunk);
  a.topk_stream = CallTopKStream(stub, TopKOptions(), Ref().bytes, kStreamChunk);
  // Parts arrive side by side, each with keys [total * i / 2, total * (i + 1) / 2) of the whole.
  static int job = 0;
  const std::string job_id = "gpu-oom-test-job-" + std::to_string(++job);
  std::thread parts[2];
  for (uint32_t i = 0; i < 2; ++i) {
    parts[i] = std::thread([&, i] {
      v1::SortStreamRequest first = StreamFirst();
      first.mutable_part()->set_job(job_id);
      first.mutable_part()->set_index(i);
      first.mutable_part()->set_count(2);
      first.mutable_part()->set_total_keys(kKeys);
      const std::size_t begin = kKeys * i / 2 * 4, end = kKeys * (i + 1) / 2 * 4;
      a.parts[i] = CallSortStream(*server.NewStub(), first, Ref().bytes.substr(begin, end - begin), kStreamChunk);
    });
  }
  for (std::thread& t : parts) t.join();
  return a;
}

void ExpectSorted(const CallResult& call, const std::string& what) {
  ASSERT_TRUE(call.status.ok()) << what << ": " << call.status.error_message();
  ASSERT_TRUE(FromBytes<uint32_t>(call.keys) == Ref().sorted) << what << ": keys differ from std::sort's";
  EXPECT_EQ(call.info.backend(), v1::BACKEND_CUDA) << what;
}

void ExpectTopK(const CallResult& call, const std::string& what) {
  ASSERT_TRUE(call.status.ok()) << what << ": " << call.status.error_message();
  const std::vector<uint32_t> values = FromBytes<uint32_t>(call.keys);
  const std::vector<int64_t> positions = FromBytes<int64_t>(call.indices);
  const std::vector<uint32_t> want(Ref().sorted.rbegin(), Ref().sorted.rbegin() + kTopK);
  ASSERT_TRUE(values == want) << what << ": not the " << kTopK << " largest keys, largest first";
  ASSERT_EQ(positions.size(), kTopK) << what;
  for (std::size_t i = 0; i < kTopK; ++i) {
    ASSERT_LT(static_cast<std::size_t>(positions[i]), kKeys) << what;
    ASSERT_EQ(Ref().keys[positions[i]], values[i]) << what << ": position " << i << " is not its key's";
  }
  EXPECT_EQ(call.info.backend(), v1::BACKEND_CUDA) << what;
}

void ExpectAnswered(const Answers& a) {
  ExpectSorted(a.sort, "Sort");
  ExpectTopK(a.topk, "TopK");
  ExpectSorted(a.sort_stream, "SortStream");
  ExpectTopK(a.topk_stream, "TopKStream");
  for (const CallResult& part : a.parts) ASSERT_TRUE(part.status.ok()) << "part: " << part.status.error_message();
  CallResult whole = a.parts[0];
  whole.keys += a.parts[1].keys;
  whole.info = a.parts[1].info;
  ExpectSorted(whole, "SortStream in parts");
}

void ExpectNoRoom(const CallResult& call, const std::string& what) {
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << what << ": " << call.status.error_message();
  EXPECT_THAT(call.status.error_message(), HasSubstr("the GPU has no room for this request")) << what;
}

void ExpectRefusedForRoom(const Answers& a) {
  ExpectNoRoom(a.sort, "Sort");
  ExpectNoRoom(a.topk, "TopK");
  ExpectNoRoom(a.sort_stream, "SortStream");
  ExpectNoRoom(a.topk_stream, "TopKStream");
  // The part that found no room says so; its sibling says the same or that the Sort failed (ABORTED).
  int no_room = 0;
  for (const CallResult& part : a.parts) {
    EXPECT_THAT(part.status.error_code(),
                AnyOf(grpc::StatusCode::RESOURCE_EXHAUSTED, grpc::StatusCode::ABORTED)) << part.status.error_message();
    if (part.status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ExpectNoRoom(part, "SortStream part");
      ++no_room;
    }
  }
  EXPECT_GE(no_room, 1);
}

double DeviceMemoryGauge(TestServer& server, const std::string& kind) {
  return MetricValue(HttpGet(server.server().metrics_port(), "/metrics"),
                     "gpusort_device_memory_bytes{device=\"cuda:0\",kind=\"" + kind + "\"}");
}

void ExpectServing(TestServer& server) {
  EXPECT_EQ(CheckHealth(server.channel(), ""), HealthStatus::SERVING);
  EXPECT_EQ(CheckHealth(server.channel(), "gpusort.v1.SortService"), HealthStatus::SERVING);
}

TEST(GpuMemoryExhausted, EveryPathSaysNoRoomThenAnswersOnceTheMemoryIsBack) {
  START_OR_SKIP(server, Config());
  // First with the GPU free: checks the answers, and loads every kernel these paths launch (loading
  // takes device memory too).
  ExpectAnswered(SendAll(*server));
  if (HasFatalFailure()) return;

  kernels::testing::DeviceMemoryHog hog;
  ASSERT_TRUE(hog.TakeAllBut(kLeaveFree).ok());
  std::size_t free_bytes = 0, total_bytes = 0;
  ASSERT_TRUE(kernels::DeviceMemoryInfo(&free_bytes, &total_bytes).ok());
  ASSERT_LE(free_bytes, kLeaveFree + 16 * kMiB) << "the hog did not take the GPU";
  ExpectRefusedForRoom(SendAll(*server));
  // Running out is not a failure of the server: it keeps serving.
  ExpectServing(*server);
  // The gauges, read after those calls, show the card full.
  const double used = DeviceMemoryGauge(*server, "device_used"), total = DeviceMemoryGauge(*server, "device_total");
  EXPECT_NEAR(total, static_cast<double>(total_bytes), 1e-6 * static_cast<double>(total_bytes));
  EXPECT_GE(used, static_cast<double>(hog.held_bytes()));
  EXPECT_LE(total - used, static_cast<double>(kLeaveFree + 64 * kMiB));
  EXPECT_GE(DeviceMemoryGauge(*server, "pool_used"), 0);
  EXPECT_GE(DeviceMemoryGauge(*server, "pool_reserved"), 0);

  hog.Release();
  ExpectAnswered(SendAll(*server));
  ExpectServing(*server);
}

// A CUDA call that fails without harm to the context (here: registering host memory twice) must not
// leave its error behind as the thread's "last error", where the next kernel launch's check would take
// it for its own. A worker thread that met one failure would otherwise fail the next request it ran.
TEST(RecoverableCudaError, LeavesNothingForTheThreadsNextLaunch) {
  std::string why;
  if (kernels::CountDevices(&why) == 0) GTEST_SKIP() << "no usable GPU: " << why;
  ASSERT_TRUE(kernels::UseDevice(0).ok());
  const std::unique_ptr<std::byte, decltype(&std::free)> host(static_cast<std::byte*>(std::aligned_alloc(4096, kMiB)),
                                                               &std::free);
  ASSERT_NE(host, nullptr);
  kernels::HostRegistration first, second;
  ASSERT_TRUE(kernels::HostRegistration::Register(host.get(), kMiB, &first).ok());
  const kernels::Status again = kernels::HostRegistration::Register(host.get(), kMiB, &second);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.code(), kernels::StatusCode::kInternal) << again.message();
  EXPECT_THAT(again.message(), HasSubstr("cudaErrorHostMemoryAlreadyRegistered"));

  kernels::Stream stream;
  ASSERT_TRUE(kernels::Stream::Create(&stream).ok());
  kernels::DeviceMemoryPool pool;
  ASSERT_TRUE(kernels::DeviceMemoryPool::Create(0, &pool).ok());
  kernels::DeviceAllocation keys;
  ASSERT_TRUE(pool.Allocate(1024 * 4, stream, &keys).ok());
  const kernels::Status launched = kernels::FromOrderedBitsAsync(kernels::KeyWidth::k32, kernels::KeyKind::kUnsigned,
                                                                 false, keys.data(), 1024, stream);
  EXPECT_TRUE(launched.ok()) << launched.message();
  EXPECT_TRUE(stream.Synchronize().ok());
}

}  // namespace
}  // namespace gpusort::testing
