// SlotLeases (server/backend/slot_leases.h), the bookkeeping of a GPU's stream slots: at depth 1 a job
// holds its slot until it returns it; at depth 2 a second job queues behind one that has queued all its
// work, never beside one still queuing and never as a third; each job of a slot has its own event set;
// a slot no job holds goes first; and under many threads no slot ever passes those bounds. No GPU.
#include "server/backend/slot_leases.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace gpusort {
namespace {

// True once `done` holds, polling for up to 10 s.
bool Eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A pause long enough for a wrong grant to show while a waiter should still be waiting.
void Pause() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

TEST(SlotLeases, AtDepthOneAJobHoldsItsSlotUntilItReturnsIt) {
  SlotLeases leases(1, 1);
  const SlotLeases::Grant first = leases.Acquire();
  EXPECT_EQ(first.slot, 0);
  EXPECT_EQ(first.events, 0);
  leases.StopQueuing(first);
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    const SlotLeases::Grant next = leases.Acquire();
    acquired = true;
    leases.Return(next, true);
  });
  Pause();
  EXPECT_FALSE(acquired) << "a job queued behind another at depth 1";
  leases.Return(first, false);
  EXPECT_TRUE(Eventually([&] { return acquired.load(); }));
  waiter.join();
}

TEST(SlotLeases, AtDepthTwoASecondJobQueuesBehindOneWhoseWorkIsAllQueued) {
  SlotLeases leases(1, 2);
  const SlotLeases::Grant first = leases.Acquire();
  std::optional<SlotLeases::Grant> second, third;
  std::atomic<int> acquired{0};
  std::thread waiter([&] {
    second = leases.Acquire();
    acquired = 1;
    third = leases.Acquire();
    acquired = 2;
  });
  Pause();
  EXPECT_EQ(acquired, 0) << "a job queued beside one still queuing";
  leases.StopQueuing(first);
  ASSERT_TRUE(Eventually([&] { return acquired >= 1; }));
  EXPECT_EQ(second->slot, first.slot);
  EXPECT_NE(second->events, first.events) << "two jobs of one slot share their events";
  Pause();
  EXPECT_EQ(acquired, 1) << "a third job queued beside the second";
  leases.StopQueuing(*second);
  Pause();
  EXPECT_EQ(acquired, 1) << "three jobs on a slot of depth 2";
  leases.Return(first, false);
  ASSERT_TRUE(Eventually([&] { return acquired == 2; }));
  waiter.join();
  EXPECT_EQ(third->events, first.events) << "the first job's events were not taken again";
  leases.Return(*second, false);
  leases.Return(*third, true);
}

TEST(SlotLeases, ASlotNoJobHoldsGoesBeforeOneThatStillEndsAJob) {
  SlotLeases leases(2, 2);
  const SlotLeases::Grant first = leases.Acquire();
  leases.StopQueuing(first);
  const SlotLeases::Grant second = leases.Acquire();
  EXPECT_NE(second.slot, first.slot);
  EXPECT_EQ(second.events, 0);
  const SlotLeases::Grant third = leases.Acquire();  // both slots hold a job: behind the one that ends one
  EXPECT_EQ(third.slot, first.slot);
  EXPECT_EQ(third.events, 1);
  leases.Return(first, false);
  leases.Return(second, true);
  leases.Return(third, true);
}

TEST(SlotLeases, OnlySlotsNoJobQueuesOnAreTakable) {
  SlotLeases leases(3, 2);
  const SlotLeases::Grant queuing = leases.Acquire();
  const SlotLeases::Grant ending = leases.Acquire();
  leases.StopQueuing(ending);
  std::set<int> takable;
  leases.ForEachTakable([&](int s) { takable.insert(s); });
  EXPECT_EQ(takable.count(queuing.slot), 0u);
  EXPECT_EQ(takable.count(ending.slot), 1u);
  EXPECT_EQ(takable.size(), 2u);
  leases.Return(queuing, true);
  leases.Return(ending, false);
}

// 16 threads on 4 slots of depth 2, each job stopping its queuing or not before it ends: at no moment
// does a slot have two jobs queuing, more than two jobs, or one event set held twice.
TEST(SlotLeases, ManyThreadsNeverPassTheBounds) {
  constexpr int kSlots = 4, kDepth = 2, kThreads = 16, kJobs = 3000;
  SlotLeases leases(kSlots, kDepth);
  std::array<std::atomic<int>, kSlots> queuing{}, jobs{};
  std::array<std::array<std::atomic<bool>, kDepth>, kSlots> held{};
  std::atomic<int> violations{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < kJobs; ++i) {
        const SlotLeases::Grant g = leases.Acquire();
        if (queuing[g.slot].fetch_add(1) != 0) ++violations;
        if (jobs[g.slot].fetch_add(1) >= kDepth) ++violations;
        if (held[g.slot][g.events].exchange(true)) ++violations;
        const bool stop = rng() % 4 != 0;
        if (rng() % 8 == 0) std::this_thread::yield();
        queuing[g.slot].fetch_sub(1);  // before the call that lets another queue
        if (stop) {
          leases.StopQueuing(g);
          if (rng() % 8 == 0) std::this_thread::yield();
        }
        held[g.slot][g.events] = false;
        jobs[g.slot].fetch_sub(1);
        leases.Return(g, !stop);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(violations, 0);
  std::set<int> takable;
  leases.ForEachTakable([&](int s) { takable.insert(s); });
  EXPECT_EQ(takable.size(), static_cast<std::size_t>(kSlots)) << "a slot was lost";
}

}  // namespace
}  // namespace gpusort
