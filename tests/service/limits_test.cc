// The small parts behind issue 14's limits, alone: caller text, the per-caller admission shares, the
// log's rate limit and the stream watchdog.
#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "server/core/caller_text.h"
#include "server/service/admission.h"
#include "server/service/log_limiter.h"
#include "server/service/stream_watchdog.h"

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
