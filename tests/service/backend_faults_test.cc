// What the service does when its backend fails (issue 14): a failed call answers INTERNAL naming its
// request id, and the server keeps serving; a backend that reports itself broken for good (the CUDA
// backend after a sticky CUDA error, Backend::Healthy) turns health NOT_SERVING and has new calls
// refused with UNAVAILABLE, which callers retry on another replica. The same contract on a real GPU:
// tests/gpu/gpu_fault_test.cc.
#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "gpusort/client.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/core/status_macros.h"
#include "tests/service/health_check.h"
#include "tests/service/rpc_calls.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"
#include "tests/support/own_memory_backend.h"

namespace gpusort::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The CPU backend, with failures on demand: the next `fail_next` Sort/TopK calls answer INTERNAL, as a
// CUDA error would; with `break_on_failure` the failure also breaks the backend for good, as a sticky
// CUDA error does (Healthy() is UNAVAILABLE from then on). `broken` may be set directly too.
class FaultyBackend final : public OwnMemoryBackend {
 public:
  struct Faults {
    std::atomic<int> fail_next{0};
    std::atomic<bool> break_on_failure{false};
    std::atomic<bool> broken{false};
    std::atomic<int> calls{0};  // Sort and TopK calls that reached the backend
  };
  static constexpr char kFailure[] = "radix sort: scripted CUDA failure (an illegal memory access was encountered)";

  explicit FaultyBackend(std::shared_ptr<Faults> faults) : faults_(std::move(faults)) {}

  BackendKind kind() const override { return BackendKind::kCpu; }
  std::string device() const override { return "faulty test backend"; }
  std::vector<Algorithm> sort_algorithms() const override { return cpu_->sort_algorithms(); }
  std::vector<Algorithm> topk_algorithms() const override { return cpu_->topk_algorithms(); }
  absl::Status Healthy() const override {
    if (!faults_->broken.load()) return absl::OkStatus();
    return absl::UnavailableError(std::string("the GPU failed: ") + kFailure + "; this replica must be restarted");
  }

  absl::Status Sort(const SortSpec& spec, const SortBuffers& buffers, const Cancellation& cancellation,
                    ExecutionReport& report) override {
    RETURN_IF_ERROR(Fault());
    return RunSort(*cpu_, spec, buffers, cancellation, report);
  }
  absl::Status TopK(const TopKSpec& spec, const TopKBuffers& buffers, const Cancellation& cancellation,
                    ExecutionReport& report) override {
    RETURN_IF_ERROR(Fault());
    return RunTopK(*cpu_, spec, buffers, cancellation, report);
  }

 private:
  absl::Status Fault() {
    ++faults_->calls;
    for (int left = faults_->fail_next.load(); left > 0;) {
      if (faults_->fail_next.compare_exchange_weak(left, left - 1)) {
        if (faults_->break_on_failure.load()) faults_->broken = true;
        return absl::InternalError(kFailure);
      }
    }
    return absl::OkStatus();
  }

  std::shared_ptr<Faults> faults_;
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend();
};

// A server on a FaultyBackend.
struct FaultyServer {
  explicit FaultyServer(ServerConfig config = LoopbackConfig())
      : faults(std::make_shared<FaultyBackend::Faults>()),
        server(config, std::make_unique<FaultyBackend>(faults)) {}
  std::shared_ptr<FaultyBackend::Faults> faults;
  TestServer server;
};

const std::vector<uint32_t>& Keys() {
  static const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 5000, 14);
  return keys;
}

v1::SortRequest SortOf(const std::vector<uint32_t>& keys) {
  v1::SortRequest request;
  request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  request.set_keys(ToBytes(keys));
  return request;
}

v1::TopKRequest TopKOf(const std::vector<uint32_t>& keys, uint64_t k) {
  v1::TopKRequest request;
  request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  request.mutable_options()->set_k(k);
  request.set_keys(ToBytes(keys));
  return request;
}

v1::SortStreamRequest SortStreamOf() {
  v1::SortStreamRequest first;
  first.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  return first;
}

std::vector<uint32_t> Sorted(std::vector<uint32_t> keys) {
  std::sort(keys.begin(), keys.end());
  return keys;
}

void ExpectServing(TestServer& server, HealthStatus::ServingStatus want) {
  EXPECT_EQ(CheckHealth(server.channel(), ""), want);
  EXPECT_EQ(CheckHealth(server.channel(), "gpusort.v1.SortService"), want);
}

// INTERNAL, naming the request id the reply's header carries (the caller's own, or one the server made).
void ExpectInternalNamingItsId(const CallResult& call, const std::string& sent_id = "") {
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::INTERNAL) << call.status.error_message();
  EXPECT_THAT(call.status.error_message(), HasSubstr("scripted CUDA failure"));
  ASSERT_FALSE(call.request_id.empty()) << "an admitted call's reply carries x-request-id";
  if (!sent_id.empty()) {
    EXPECT_EQ(call.request_id, sent_id);
  }
  EXPECT_THAT(call.status.error_message(), HasSubstr("request id " + call.request_id + ": "));
}

// UNAVAILABLE saying that the replica must restart, before any header: Trailers-Only, which a caller's
// retry policy may retry on another replica.
void ExpectRefusedForGood(const CallResult& call) {
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::UNAVAILABLE) << call.status.error_message();
  EXPECT_THAT(call.status.error_message(), HasSubstr("the GPU failed: "));
  EXPECT_THAT(call.status.error_message(), HasSubstr("this replica must be restarted"));
  EXPECT_EQ(call.request_id, "");
}

TEST(BackendFaults, FailedCallNamesItsRequestIdAndTheServerKeepsServing) {
  FaultyServer s;
  s.faults->fail_next = 1;
  ExpectInternalNamingItsId(CallSort(s.server.stub(), SortOf(Keys()), "fault-test-sort-1"), "fault-test-sort-1");
  // Not sticky: the next call is answered, and health never changed.
  ExpectServing(s.server, HealthStatus::SERVING);
  const CallResult next = CallSort(s.server.stub(), SortOf(Keys()));
  ASSERT_TRUE(next.status.ok()) << next.status.error_message();
  EXPECT_EQ(FromBytes<uint32_t>(next.keys), Sorted(Keys()));
}

TEST(BackendFaults, TheServersOwnRequestIdWhenTheCallerSentNone) {
  FaultyServer s;
  s.faults->fail_next = 2;
  ExpectInternalNamingItsId(CallSort(s.server.stub(), SortOf(Keys())));
  ExpectInternalNamingItsId(CallTopK(s.server.stub(), TopKOf(Keys(), 10)));
}

TEST(BackendFaults, StreamsNameTheirRequestIdToo) {
  FaultyServer s;
  s.faults->fail_next = 2;
  const std::string keys = ToBytes(Keys());
  ExpectInternalNamingItsId(CallSortStream(s.server.stub(), SortStreamOf(), keys, 4096, "fault-test-stream"),
                            "fault-test-stream");
  v1::TopKOptions options;
  options.set_dtype(v1::DTYPE_UINT32);
  options.set_k(10);
  ExpectInternalNamingItsId(CallTopKStream(s.server.stub(), options, keys, 4096, "fault-test-topk-stream"),
                            "fault-test-topk-stream");
  ExpectServing(s.server, HealthStatus::SERVING);
}

TEST(BackendFaults, CallerMistakesDoNotCarryTheRequestId) {
  FaultyServer s;
  v1::SortRequest bad = SortOf(Keys());
  bad.mutable_keys()->push_back('x');  // not a whole number of keys
  const CallResult call = CallSort(s.server.stub(), bad, "fault-test-bad");
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(call.status.error_message(), Not(HasSubstr("fault-test-bad")));
}

// The failure breaks the backend (a sticky CUDA error): that call is INTERNAL with its id; health is
// NOT_SERVING as soon as its answer is out; every later call of every RPC is refused, and none of them
// reaches the backend.
TEST(BackendFaults, BrokenBackendTurnsHealthNotServingAndNewCallsUnavailable) {
  FaultyServer s;
  ASSERT_TRUE(CallSort(s.server.stub(), SortOf(Keys())).status.ok());
  ExpectServing(s.server, HealthStatus::SERVING);
  s.faults->break_on_failure = true;
  s.faults->fail_next = 1;
  ExpectInternalNamingItsId(CallSort(s.server.stub(), SortOf(Keys()), "fault-test-break"), "fault-test-break");
  ExpectServing(s.server, HealthStatus::NOT_SERVING);

  const int calls_before = s.faults->calls.load();
  const std::string keys = ToBytes(Keys());
  ExpectRefusedForGood(CallSort(s.server.stub(), SortOf(Keys()), "fault-test-after-1"));
  ExpectRefusedForGood(CallTopK(s.server.stub(), TopKOf(Keys(), 10)));
  ExpectRefusedForGood(CallSortStream(s.server.stub(), SortStreamOf(), keys, 4096));
  v1::TopKOptions options;
  options.set_dtype(v1::DTYPE_UINT32);
  options.set_k(10);
  ExpectRefusedForGood(CallTopKStream(s.server.stub(), options, keys, 4096));
  EXPECT_EQ(s.faults->calls.load(), calls_before);
  ExpectServing(s.server, HealthStatus::NOT_SERVING);
}

// A backend found broken before any call failed (Healthy() alone says so): the first call is refused,
// and health follows.
TEST(BackendFaults, BackendThatReportsItselfBrokenIsRefusedAtTheNextCall) {
  FaultyServer s;
  s.faults->broken = true;
  ExpectRefusedForGood(CallSort(s.server.stub(), SortOf(Keys())));
  ExpectServing(s.server, HealthStatus::NOT_SERVING);
  EXPECT_EQ(s.faults->calls.load(), 0);
}

// Callers of the client library over two replicas lose nothing when one breaks: its refusals are
// retried on the other, and its health keeps calls away.
TEST(BackendFaults, CallersOverTwoReplicasLoseNothingWhenOneIsBroken) {
  FaultyServer broken;
  broken.faults->broken = true;
  FaultyServer healthy;
  Client client(ClientOptions{.targets = {broken.server.address(), healthy.server.address()}});
  ASSERT_TRUE(client.status().ok()) << client.status();
  for (int i = 0; i < 50; ++i) {
    auto sorted = client.Sort<uint32_t>(Keys());
    ASSERT_TRUE(sorted.ok()) << i << ": " << sorted.status();
    ASSERT_EQ(sorted->keys, Sorted(Keys()));
  }
  EXPECT_EQ(broken.faults->calls.load(), 0);
  EXPECT_EQ(healthy.faults->calls.load(), 50);
}

}  // namespace
}  // namespace gpusort::testing
