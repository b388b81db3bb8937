// The small parts behind issue 14's limits, alone: caller text, the per-caller admission shares, the
// log's rate limit and the stream watchdog.
#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "server/core/caller_text.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/service/admission.h"
#include "server/service/config.h"
#include "server/service/metrics.h"
#include "server/service/scheduler.h"
#include "server/service/worker_pool.h"
#include "server/service/log_limiter.h"
#include "server/transport/grpc/stream_watchdog.h"
#include "tests/support/own_memory_backend.h"

namespace gpusort {
namespace {

TEST(CallerText, EscapesEveryByteOutsidePrintableAsciiAndTheBackslash) {
  EXPECT_EQ(CallerText("plain text 'quoted' \"too\""), "plain text 'quoted' \"too\"");
  EXPECT_EQ(CallerText(std::string("a\nb\0c\x1b\\\xff", 8)), "a\\x0ab\\x00c\\x1b\\x5c\\xff");
}

TEST(CallerText, CutsLongTextAndSaysHowLongItWas) {
  const std::string long_text(20000, '\n');
  const std::string shown = CallerText(long_text, 8);
  EXPECT_EQ(shown, "\\x0a\\x0a\\x0a\\x0a\\x0a\\x0a\\x0a\\x0a...(20000 bytes)");
  EXPECT_LE(shown.size(), 4 * 8 + 24u);
}

TEST(CallerText, RequestIdsAreVisibleAsciiOfBoundedLength) {
  EXPECT_TRUE(IsUsableRequestId("abc-123_x:y/z+=."));
  EXPECT_TRUE(IsUsableRequestId(std::string(kRequestIdMaxBytes, 'a')));
  for (const std::string& bad : {std::string(), std::string(kRequestIdMaxBytes + 1, 'a'), std::string("a b"),
                                std::string("a\nb"), std::string("a\0b", 3), std::string("\x7f"),
                                std::string("caf\xc3\xa9"), std::string("\t")}) {
    EXPECT_FALSE(IsUsableRequestId(bad)) << CallerText(bad);
  }
}

TEST(Admission, EachCallerGetsOnlyItsShareAndTheTotalHolds) {
  Admission admission(4, 3);
  EXPECT_EQ(admission.TryAcquire("mallory"), AdmissionRefusal::kNone);
  EXPECT_EQ(admission.TryAcquire("mallory"), AdmissionRefusal::kNone);
  EXPECT_EQ(admission.TryAcquire("mallory"), AdmissionRefusal::kNone);
  EXPECT_EQ(admission.TryAcquire("mallory"), AdmissionRefusal::kCaller);
  EXPECT_EQ(admission.TryAcquire("alice"), AdmissionRefusal::kNone);
  EXPECT_EQ(admission.TryAcquire("bob"), AdmissionRefusal::kTotal);
  admission.Release("mallory");
  EXPECT_EQ(admission.TryAcquire("bob"), AdmissionRefusal::kNone);
  for (const char* who : {"mallory", "mallory", "alice", "bob"}) admission.Release(who);
  EXPECT_EQ(admission.inflight(), 0);
  EXPECT_TRUE(admission.WaitIdle(std::chrono::milliseconds(1)));
}

// The count load-aware AUTO reads: every ticket given, none refused, each given back.
TEST(Admission, TheCountForLoadRoutingFollowsTheTicketsAndOutlivesTheAdmission) {
  std::shared_ptr<const std::atomic<int>> count;
  {
    Admission admission(2, 1);
    count = admission.in_flight_now();
    EXPECT_EQ(count->load(), 0);
    EXPECT_EQ(admission.TryAcquire("alice"), AdmissionRefusal::kNone);
    EXPECT_EQ(admission.TryAcquire("alice"), AdmissionRefusal::kCaller);
    EXPECT_EQ(count->load(), 1) << "a refused call holds no ticket";
    EXPECT_EQ(admission.TryAcquire("bob"), AdmissionRefusal::kNone);
    EXPECT_EQ(admission.TryAcquire("carol"), AdmissionRefusal::kTotal);
    EXPECT_EQ(count->load(), 2);
    admission.Release("alice");
    EXPECT_EQ(count->load(), 1);
    admission.Release("bob");
  }
  EXPECT_EQ(count->load(), 0) << "still readable after the admission is gone";
}

// A backend that keeps what the scheduler hands it to route by.
class WatchingBackend final : public gpusort::testing::OwnMemoryBackend {
 public:
  BackendKind kind() const override { return BackendKind::kCpu; }
  std::string device() const override { return "watching"; }
  std::vector<Algorithm> sort_algorithms() const override { return {Algorithm::kCpu}; }
  std::vector<Algorithm> topk_algorithms() const override { return {Algorithm::kCpu}; }
  void WatchCallsInFlight(std::shared_ptr<const std::atomic<int>> calls) override { calls_ = std::move(calls); }
  absl::Status Sort(const SortSpec&, const SortBuffers&, const Cancellation&, ExecutionReport&) override {
    return absl::OkStatus();
  }
  absl::Status TopK(const TopKSpec&, const TopKBuffers&, const Cancellation&, ExecutionReport&) override {
    return absl::OkStatus();
  }
  std::shared_ptr<const std::atomic<int>> calls_;
};

// The scheduler hands its admitted calls to the backend (load-aware AUTO's count, auto_router.cc): a
// waiting stream's ticket is not a call in flight, an admitted call is until it is released.
TEST(Scheduler, HandsTheBackendItsAdmittedCallsInFlight) {
  ServerConfig config;
  config.max_inflight = 8;
  config.workers = 1;
  WatchingBackend backend;
  Metrics metrics("test", "cpu");
  Scheduler scheduler(config, backend, metrics);
  ASSERT_NE(backend.calls_, nullptr);
  const auto far = Cancellation::Clock::now() + std::chrono::hours(1);
  CallState stream("SortStream", "", far), sort("Sort", "", far), topk("TopK", "", far);
  stream.caller = "alice";
  sort.caller = "bob";
  topk.caller = "carol";
  ASSERT_TRUE(scheduler.AdmitWaitingStream(stream).ok());
  EXPECT_EQ(backend.calls_->load(), 0) << "a stream waiting for its first message";
  ASSERT_TRUE(scheduler.Admit(sort).ok());
  ASSERT_TRUE(scheduler.Admit(topk).ok());
  ASSERT_TRUE(scheduler.Admit(stream).ok());
  EXPECT_EQ(backend.calls_->load(), 3);
  scheduler.Release(sort);
  scheduler.Release(stream);
  EXPECT_EQ(backend.calls_->load(), 1);
  scheduler.Release(topk);
  EXPECT_EQ(backend.calls_->load(), 0);
}

// The server's threads carry names (thread_name.h), which the GPU machine's probes group CPU time by.
TEST(ThreadNames, AWorkerThreadIsNamedForWhatItDoes) {
  WorkerPool pool(1, [](std::size_t) {});
  std::promise<std::string> name;
  pool.Submit([&name] {
    std::ifstream comm("/proc/thread-self/comm");
    std::string line;
    std::getline(comm, line);
    name.set_value(line);
  });
  EXPECT_EQ(name.get_future().get(), "gs-worker");
}

TEST(LogLimiter, LetsThroughAFewLinesASecondPerKindAndCountsTheRest) {
  LogLimiter limiter(3);
  const auto t0 = LogLimiter::Clock::now();
  uint64_t held_back = 99;
  int written = 0;
  for (int i = 0; i < 10; ++i) written += limiter.Allow("UNAVAILABLE", &held_back, t0);
  EXPECT_EQ(written, 3);
  EXPECT_TRUE(limiter.Allow("INTERNAL", &held_back, t0));  // another kind has its own lines
  EXPECT_EQ(held_back, 0u);
  EXPECT_TRUE(limiter.Allow("UNAVAILABLE", &held_back, t0 + std::chrono::milliseconds(1001)));
  EXPECT_EQ(held_back, 7u);
}

struct FakeCall : StreamWatchdog::Watched {
  std::atomic<StreamWatchdog::Clock::time_point> deadline{StreamWatchdog::Clock::time_point::max()};
  std::atomic<int> expired{0};
  StreamWatchdog::Clock::time_point WatchDeadline() const override { return deadline.load(); }
  void WatchExpired() override { ++expired; }
};

TEST(StreamWatchdog, EndsACallOnceItsDeadlinePassesAndNeverTouchesItAfterForget) {
  StreamWatchdog watchdog(std::chrono::milliseconds(5));
  FakeCall busy, late, forgotten;
  for (FakeCall* c : {&busy, &late, &forgotten}) watchdog.Watch(c);
  late.deadline = StreamWatchdog::Clock::now() + std::chrono::milliseconds(20);
  watchdog.Forget(&forgotten);
  forgotten.deadline = StreamWatchdog::Clock::now();
  for (int i = 0; i < 400 && late.expired == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(late.expired, 1);  // once, though its deadline stays past
  EXPECT_EQ(busy.expired, 0);
  EXPECT_EQ(forgotten.expired, 0);
  watchdog.Forget(&late);
  watchdog.Forget(&busy);
}

}  // namespace
}  // namespace gpusort
