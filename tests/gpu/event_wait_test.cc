// kernels::Event::Synchronize's wait (a poll for EventWaitSpin(), then a sleep; at most MostEventPollers()
// threads poll at once) and Stream::WaitFor, on copies long enough (64 MiB each way, about 2.4 ms on
// PCIe 5) that the event is still pending when the wait starts: whatever the spin, the wait ends with the
// work done, leaves no "not ready" behind for the next launch's error check, and a second stream that
// waits for a first one's event sees its bytes.
// Skips when no GPU is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "gpusort/kernels/key_transform.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"

namespace gpusort::kernels {
namespace {

constexpr std::size_t kBytes = std::size_t{64} << 20;

class EventWaitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (CountDevices(&why) == 0) GTEST_SKIP() << "no usable GPU: " << why;
    ASSERT_TRUE(UseDevice(0).ok());
    ASSERT_TRUE(Stream::Create(&first_).ok());
    ASSERT_TRUE(Stream::Create(&second_).ok());
    ASSERT_TRUE(Event::Create(&event_).ok());
    ASSERT_TRUE(DeviceMemoryPool::Create(0, &pool_).ok());
    ASSERT_TRUE(pool_.Allocate(kBytes, first_, &device_).ok());
    ASSERT_TRUE(PinnedBuffer::Allocate(kBytes, &source_).ok());
    ASSERT_TRUE(PinnedBuffer::Allocate(kBytes, &sink_).ok());
    auto* words = reinterpret_cast<std::uint32_t*>(source_.data());
    std::iota(words, words + kBytes / 4, std::uint32_t{7});
    ASSERT_TRUE(first_.Synchronize().ok());
  }
  void TearDown() override {
    SetEventWaitSpin(kDefaultEventWaitSpin);
    SetMostEventPollers(0);
  }
  // 4x MostEventPollers() + 2 threads wait on one pending event, spinning up to 1 s: the count of pollers
  // never passes MostEventPollers(), reaches at least one, is 0 after, and every wait ends with the bytes.
  void ExpectAtMostMostEventPollersPoll();

  bool SinkHoldsSource() const { return std::memcmp(sink_.data(), source_.data(), kBytes) == 0; }

  Stream first_, second_;
  Event event_;
  DeviceMemoryPool pool_;
  DeviceAllocation device_;
  PinnedBuffer source_, sink_;
};

TEST_F(EventWaitTest, EveryWaitEndsWithTheWorkDoneAndLeavesNoErrorForTheNextLaunch) {
  for (const auto spin : {std::chrono::microseconds(0), std::chrono::microseconds(50), std::chrono::microseconds(2000),
                          std::chrono::microseconds(1000000)}) {
    SCOPED_TRACE(spin.count());
    SetEventWaitSpin(spin);
    EXPECT_EQ(EventWaitSpin(), spin);
    std::memset(sink_.data(), 0, kBytes);
    ASSERT_TRUE(CopyToDeviceAsync(device_.data(), source_.data(), kBytes, first_).ok());
    ASSERT_TRUE(CopyToHostAsync(sink_.data(), device_.data(), kBytes, first_).ok());
    ASSERT_TRUE(event_.Record(first_).ok());
    const Status waited = event_.Synchronize();
    ASSERT_TRUE(waited.ok()) << waited.message();
    EXPECT_TRUE(SinkHoldsSource());
    // A launch right after a wait that polled a pending event: its error check must see no error.
    std::uint64_t* or_and = device_.as<std::uint64_t>();
    const Status launched = ToOrderedBitsAsync(KeyWidth::k32, KeyKind::kUnsigned, false, device_.data(), 1024,
                                               or_and + (kBytes / 8 - 2), first_);
    EXPECT_TRUE(launched.ok()) << launched.message();
    ASSERT_TRUE(first_.Synchronize().ok());
  }
}

// Many waiters on one pending event with a long spin: at most MostEventPollers() poll, the rest sleep, and
// every wait still ends with the work done; no poller is left counted after.
TEST_F(EventWaitTest, AtMostAQuarterOfTheCoresPollAndTheRestSleep) {
  ExpectAtMostMostEventPollersPoll();
}

TEST_F(EventWaitTest, AtMostTheSetNumberPollAndTheRestSleep) {
  for (unsigned most : {1u, 2u}) {
    SCOPED_TRACE(most);
    SetMostEventPollers(most);
    ExpectAtMostMostEventPollersPoll();
  }
}

void EventWaitTest::ExpectAtMostMostEventPollersPoll() {
  SetEventWaitSpin(std::chrono::seconds(1));
  std::memset(sink_.data(), 0, kBytes);
  for (int i = 0; i < 4; ++i) {  // about 20 ms of copies: the waiters all start before the event
    ASSERT_TRUE(CopyToDeviceAsync(device_.data(), source_.data(), kBytes, first_).ok());
    ASSERT_TRUE(CopyToHostAsync(sink_.data(), device_.data(), kBytes, first_).ok());
  }
  ASSERT_TRUE(event_.Record(first_).ok());
  const unsigned waiters = 4 * MostEventPollers() + 2;
  std::atomic<unsigned> done{0}, failed{0};
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < waiters; ++i) {
    threads.emplace_back([&] {
      if (!event_.Synchronize().ok()) failed.fetch_add(1);
      done.fetch_add(1);
    });
  }
  unsigned most_seen = 0;
  while (done.load() < waiters) most_seen = std::max(most_seen, EventPollersNow());
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0u);
  EXPECT_GE(most_seen, 1u);
  EXPECT_LE(most_seen, MostEventPollers());
  EXPECT_EQ(EventPollersNow(), 0u);
  EXPECT_TRUE(SinkHoldsSource());
}

// The setting alone, no GPU needed.
TEST(EventWaitSpinSetting, ReadsBackWhatWasSetAndNegativeMeansSleepAtOnce) {
  EXPECT_EQ(EventWaitSpin(), kDefaultEventWaitSpin);
  SetEventWaitSpin(std::chrono::microseconds(750));
  EXPECT_EQ(EventWaitSpin().count(), 750);
  SetEventWaitSpin(std::chrono::microseconds(-5));
  EXPECT_EQ(EventWaitSpin().count(), 0);
  SetEventWaitSpin(kDefaultEventWaitSpin);
}

TEST(EventPollerSetting, ZeroMeansAQuarterOfTheCoresAndAnyOtherNumberIsTaken) {
  const unsigned quarter = std::max(1u, std::thread::hardware_concurrency() / 4);
  EXPECT_EQ(MostEventPollers(), quarter);
  SetMostEventPollers(3);
  EXPECT_EQ(MostEventPollers(), 3u);
  SetMostEventPollers(0);
  EXPECT_EQ(MostEventPollers(), quarter);
}

TEST_F(EventWaitTest, AStreamThatWaitsForAnotherStreamsEventSeesItsBytes) {
  for (int round = 0; round < 3; ++round) {
    std::memset(sink_.data(), 0, kBytes);
    ASSERT_TRUE(ZeroAsync(device_.data(), kBytes, first_).ok());
    ASSERT_TRUE(first_.Synchronize().ok());
    ASSERT_TRUE(CopyToDeviceAsync(device_.data(), source_.data(), kBytes, first_).ok());
    ASSERT_TRUE(event_.Record(first_).ok());
    ASSERT_TRUE(second_.WaitFor(event_).ok());
    ASSERT_TRUE(CopyToHostAsync(sink_.data(), device_.data(), kBytes, second_).ok());
    ASSERT_TRUE(second_.Synchronize().ok());
    EXPECT_TRUE(SinkHoldsSource()) << "round " << round;
  }
}

TEST_F(EventWaitTest, TimingEventsTimeTheWorkBetweenThemOnceItIsDone) {
  // Events made for timing only (no blocking sync) around a 64 MiB copy each way: once the stream's own
  // wait has returned, the time between them is the copies' (over 64 MiB at no more than 1 TB/s, and
  // finite), and so is a blocking event's beside them.
  Event start, stop;
  ASSERT_TRUE(Event::CreateForTiming(&start).ok());
  ASSERT_TRUE(Event::CreateForTiming(&stop).ok());
  for (int round = 0; round < 2; ++round) {
    std::memset(sink_.data(), 0, kBytes);
    ASSERT_TRUE(start.Record(first_).ok());
    ASSERT_TRUE(CopyToDeviceAsync(device_.data(), source_.data(), kBytes, first_).ok());
    ASSERT_TRUE(CopyToHostAsync(sink_.data(), device_.data(), kBytes, first_).ok());
    ASSERT_TRUE(stop.Record(first_).ok());
    ASSERT_TRUE(event_.Record(first_).ok());
    ASSERT_TRUE(event_.Synchronize().ok());
    EXPECT_TRUE(SinkHoldsSource()) << "round " << round;
    double seconds = -1, to_blocking = -1;
    ASSERT_TRUE(stop.SecondsSince(start, &seconds).ok());
    ASSERT_TRUE(event_.SecondsSince(start, &to_blocking).ok());
    EXPECT_GT(seconds, 2.0 * kBytes / 1e12) << "round " << round;
    EXPECT_LT(seconds, 10.0) << "round " << round;
    EXPECT_GE(to_blocking, seconds) << "round " << round;
  }
}

}  // namespace
}  // namespace gpusort::kernels
