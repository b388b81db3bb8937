// The limits a backend publishes (Backend::CheckSortLimits, CheckTopKLimits) are checked while the
// service validates a request: a request over one is INVALID_ARGUMENT with the backend's words, on every
// method and transport, and never reaches the backend (issue 15: the CUDA backend's 2^31-1 keys and
// ODD_EVEN's size used to be checked inside the backend, after admission and queueing, one after taking
// a stream slot). A backend of the CPU's with a made-up limit stands in for the CUDA backend, whose real
// limits need more keys than a test can send; tests/gpu/cuda_backend_test.cc checks the CUDA backend's
// own published limits against the ones it enforces.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "server/backend/cpu/cpu_backend.h"
#include "tests/service/rpc_calls.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"
#include "tests/support/own_memory_backend.h"

namespace gpusort::testing {
namespace {

using ::testing::HasSubstr;

constexpr std::size_t kMaxKeys = 1000;
constexpr char kSortLimit[] = "this test backend sorts at most 1000 keys";
constexpr char kTopKLimit[] = "this test backend takes top-k of at most 1000 keys";

// The CPU backend, publishing a limit of kMaxKeys keys per request, counting the calls that reach it.
class LimitedBackend final : public OwnMemoryBackend {
 public:
  explicit LimitedBackend(std::shared_ptr<std::atomic<int>> calls) : calls_(std::move(calls)) {}

  BackendKind kind() const override { return BackendKind::kCpu; }
  std::string device() const override { return "limited test backend"; }
  std::vector<Algorithm> sort_algorithms() const override { return cpu_->sort_algorithms(); }
  std::vector<Algorithm> topk_algorithms() const override { return cpu_->topk_algorithms(); }
  absl::Status CheckSortLimits(const SortSpec&, std::size_t count) const override {
    return count <= kMaxKeys ? absl::OkStatus() : absl::InvalidArgumentError(kSortLimit);
  }
  absl::Status CheckTopKLimits(const TopKSpec&, std::size_t count) const override {
    return count <= kMaxKeys ? absl::OkStatus() : absl::InvalidArgumentError(kTopKLimit);
  }
  absl::Status Sort(const SortSpec& spec, const SortBuffers& buffers, const Cancellation& cancellation,
                    ExecutionReport& report) override {
    ++*calls_;
    return RunSort(*cpu_, spec, buffers, cancellation, report);
  }
  absl::StatusOr<std::unique_ptr<PartedSortIngest>> StartPartedSortIngest(const SortSpec& spec,
                                                                           std::size_t total_keys) override {
    ++*calls_;
    return cpu_->StartPartedSortIngest(spec, total_keys);
  }
  absl::Status TopK(const TopKSpec& spec, const TopKBuffers& buffers, const Cancellation& cancellation,
                    ExecutionReport& report) override {
    ++*calls_;
    return RunTopK(*cpu_, spec, buffers, cancellation, report);
  }

 private:
  std::shared_ptr<std::atomic<int>> calls_;
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend();
};

class EngineLimits : public ::testing::Test {
 protected:
  std::shared_ptr<std::atomic<int>> calls_ = std::make_shared<std::atomic<int>>(0);
  TestServer server_{LoopbackConfig(), std::make_unique<LimitedBackend>(calls_)};

  static std::string Keys(std::size_t n) { return ToBytes(MakeInput<uint32_t>(Pattern::kRandom, n, n)); }
  static v1::SortRequest SortOf(std::size_t n) {
    v1::SortRequest request;
    request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
    request.set_keys(Keys(n));
    return request;
  }
  static v1::TopKOptions TopKOptions() {
    v1::TopKOptions options;
    options.set_dtype(v1::DTYPE_UINT32);
    options.set_k(10);
    return options;
  }
  static v1::TopKRequest TopKOf(std::size_t n) {
    v1::TopKRequest request;
    *request.mutable_options() = TopKOptions();
    request.set_keys(Keys(n));
    return request;
  }
  static v1::SortStreamRequest SortStreamFirst() {
    v1::SortStreamRequest first;
    first.mutable_options()->set_dtype(v1::DTYPE_UINT32);
    return first;
  }
};

TEST_F(EngineLimits, WithinTheLimitEveryMethodReachesTheBackend) {
  EXPECT_TRUE(CallSort(server_.stub(), SortOf(kMaxKeys)).status.ok());
  EXPECT_TRUE(CallTopK(server_.stub(), TopKOf(kMaxKeys)).status.ok());
  EXPECT_TRUE(CallSortStream(server_.stub(), SortStreamFirst(), Keys(kMaxKeys), 1000).status.ok());
  EXPECT_TRUE(CallTopKStream(server_.stub(), TopKOptions(), Keys(kMaxKeys), 1000).status.ok());
  EXPECT_EQ(calls_->load(), 4);
}

TEST_F(EngineLimits, OverTheLimitIsInvalidArgumentBeforeTheBackend) {
  const std::size_t n = kMaxKeys + 1;
  const CallResult sort = CallSort(server_.stub(), SortOf(n));
  EXPECT_EQ(sort.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(sort.status.error_message(), HasSubstr(kSortLimit));
  const CallResult topk = CallTopK(server_.stub(), TopKOf(n));
  EXPECT_EQ(topk.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(topk.status.error_message(), HasSubstr(kTopKLimit));
  const CallResult sort_stream = CallSortStream(server_.stub(), SortStreamFirst(), Keys(n), 1000);
  EXPECT_EQ(sort_stream.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(sort_stream.status.error_message(), HasSubstr(kSortLimit));
  const CallResult topk_stream = CallTopKStream(server_.stub(), TopKOptions(), Keys(n), 1000);
  EXPECT_EQ(topk_stream.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(topk_stream.status.error_message(), HasSubstr(kTopKLimit));
  EXPECT_EQ(calls_->load(), 0) << "a request over the backend's limit reached the backend";
}

// A Sort in parts is checked as a whole (part.total_keys) by its first message, before a job starts.
TEST_F(EngineLimits, ASortInPartsIsCheckedAsAWholeAtItsFirstMessage) {
  v1::SortStreamRequest first = SortStreamFirst();
  first.mutable_part()->set_job(std::string(16, 'j'));
  first.mutable_part()->set_index(0);
  first.mutable_part()->set_count(2);
  first.mutable_part()->set_total_keys(kMaxKeys + 2);  // each part within the limit, the whole not
  const CallResult part = CallSortStream(server_.stub(), first, Keys(kMaxKeys / 2 + 1), 1000);
  EXPECT_EQ(part.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(part.status.error_message(), HasSubstr(kSortLimit));
  EXPECT_EQ(calls_->load(), 0) << "a Sort in parts over the limit started its job";
}

}  // namespace
}  // namespace gpusort::testing
