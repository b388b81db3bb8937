// A sticky CUDA error on a real GPU (issue 14). A kernel that stores through a null pointer
// (kernels/testing/faults.h) ruins this process's CUDA context, as a kernel bug or a hardware fault
// would in production: every later CUDA call fails. The server must then answer the request that meets
// it INTERNAL, naming its request id; turn health NOT_SERVING for the whole server and for
// gpusort.v1.SortService (Kubernetes' liveness probe restarts the pod); refuse every later call with
// UNAVAILABLE saying that the replica must be restarted (callers retry elsewhere); and neither crash nor
// hang, down to its shutdown at the end.
//
// The fault poisons the whole process, so this executable holds this one test, and runs alone
// (scripts/gpu-loop.sh device --kernels; ctest: RUN_SERIAL). Never under compute-sanitizer: the fault
// is on purpose. Skips without a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpusort/kernels/runtime.h"
#include "kernels/testing/faults.h"
#include "server/backend/cuda_backend.h"
#include "tests/service/health_check.h"
#include "tests/service/rpc_calls.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"

namespace gpusort::testing {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr std::size_t kKeys = std::size_t{1} << 20;  // on the GPU by AUTO's rule as well as by name

v1::SortRequest SortOf(const std::vector<uint32_t>& keys, v1::Algorithm algorithm) {
  v1::SortRequest request;
  request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  request.mutable_options()->set_algorithm(algorithm);
  request.set_keys(ToBytes(keys));
  return request;
}

void ExpectServing(TestServer& server, HealthStatus::ServingStatus want) {
  EXPECT_EQ(CheckHealth(server.channel(), ""), want);
  EXPECT_EQ(CheckHealth(server.channel(), "gpusort.v1.SortService"), want);
}

void ExpectRefusedForGood(const CallResult& call, const std::string& what) {
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::UNAVAILABLE) << what << ": " << call.status.error_message();
  EXPECT_THAT(call.status.error_message(), HasSubstr("the GPU failed: ")) << what;
  EXPECT_THAT(call.status.error_message(), HasSubstr("this replica must be restarted")) << what;
}

TEST(GpuFault, StickyErrorFailsTheCallThenTheReplicaStopsServing) {
  auto backend = MakeCudaBackend({});
  if (!backend.ok()) GTEST_SKIP() << "no usable GPU: " << backend.status();
  ServerConfig config = LoopbackConfig();
  config.backend = "cuda";
  TestServer server(config, std::move(*backend));

  // A good request first: the GPU answers, correctly.
  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, kKeys, 14);
  std::vector<uint32_t> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  const CallResult good = CallSort(server.stub(), SortOf(keys, v1::ALGORITHM_RADIX), "gpu-fault-good");
  ASSERT_TRUE(good.status.ok()) << good.status.error_message();
  ASSERT_TRUE(FromBytes<uint32_t>(good.keys) == sorted);
  ASSERT_EQ(good.info.backend(), v1::BACKEND_CUDA);
  ExpectServing(server, HealthStatus::SERVING);

  // The fault, on the backend's device, from outside any request: the next request is the first of
  // the server's calls to meet it.
  ASSERT_TRUE(kernels::UseDevice(0).ok());
  kernels::Stream stream;
  ASSERT_TRUE(kernels::Stream::Create(&stream).ok());
  const kernels::Status fault = kernels::testing::TriggerIllegalAddress(stream);
  ASSERT_EQ(fault.code(), kernels::StatusCode::kDeviceLost) << fault.message();
  EXPECT_THAT(fault.message(), AnyOf(HasSubstr("cudaErrorIllegalAddress"), HasSubstr("cudaErrorLaunchFailure")));

  const CallResult failed = CallSort(server.stub(), SortOf(keys, v1::ALGORITHM_RADIX), "gpu-fault-victim");
  EXPECT_EQ(failed.status.error_code(), grpc::StatusCode::INTERNAL) << failed.status.error_message();
  EXPECT_THAT(failed.status.error_message(), HasSubstr("request id gpu-fault-victim: "));
  EXPECT_THAT(failed.status.error_message(), HasSubstr("cudaError"));
  // Health was turned before that answer went out.
  ExpectServing(server, HealthStatus::NOT_SERVING);

  // Every later call, of every RPC, by name or by AUTO (which would answer small arrays on the CPU):
  // the replica is gone.
  ExpectRefusedForGood(CallSort(server.stub(), SortOf(keys, v1::ALGORITHM_RADIX)), "Sort");
  ExpectRefusedForGood(CallSort(server.stub(), SortOf({3, 1, 2}, v1::ALGORITHM_AUTO)), "tiny AUTO Sort");
  v1::TopKRequest topk;
  topk.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  topk.mutable_options()->set_k(10);
  topk.set_keys(ToBytes(keys));
  ExpectRefusedForGood(CallTopK(server.stub(), topk), "TopK");
  v1::SortStreamRequest first;
  first.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  ExpectRefusedForGood(CallSortStream(server.stub(), first, ToBytes(keys), 1 << 20), "SortStream");
  ExpectRefusedForGood(CallTopKStream(server.stub(), topk.options(), ToBytes(keys), 1 << 20), "TopKStream");
  ExpectServing(server, HealthStatus::NOT_SERVING);
  // The server goes down at the end of the test, with its CUDA objects in a lost context: no crash, no
  // hang (ctest's timeout would say).
}

}  // namespace
}  // namespace gpusort::testing
