// ConnectionThreads (server/transport/connection_threads.h): the thread-per-connection holder both
// socket protocols use. What a listener relies on: running() counts only threads still serving (its
// connection limit), what a thread captured is gone before it counts as returned (a connection's
// descriptor is closed by then), reaping joins only returned threads, and JoinAll waits for every one.
#include "server/transport/connection_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace gpusort {
namespace {

// A gate the test opens to let the serving threads return.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  void Wait() {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return open; });
  }
  void Open() {
    std::lock_guard lock(mutex);
    open = true;
    cv.notify_all();
  }
};

bool WaitUntil(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(ConnectionThreads, CountsOnlyThreadsStillServing) {
  ConnectionThreads threads("test-conn");
  Gate gate;
  for (int i = 0; i < 5; ++i) threads.Start([&gate] { gate.Wait(); });
  threads.Start([] {});  // returns at once
  ASSERT_TRUE(WaitUntil([&] { return threads.running() == 5; }));
  gate.Open();
  ASSERT_TRUE(WaitUntil([&] { return threads.running() == 0; }));
  threads.ReapFinished();
  EXPECT_EQ(threads.running(), 0u);
}

TEST(ConnectionThreads, WhatAThreadCapturedIsGoneBeforeItCountsAsReturned) {
  ConnectionThreads threads("test-conn");
  auto held = std::make_shared<int>(7);
  std::weak_ptr<int> watch = held;
  std::atomic<bool> was_alive_while_serving{false};
  threads.Start([held = std::move(held), &was_alive_while_serving] { was_alive_while_serving = *held == 7; });
  ASSERT_TRUE(WaitUntil([&] { return threads.running() == 0; }));
  // running() fell to 0 only after the capture (the stand-in for a connection's descriptor) was destroyed.
  EXPECT_TRUE(watch.expired());
  EXPECT_TRUE(was_alive_while_serving.load());
}

TEST(ConnectionThreads, MoveOnlyCapturesAreServed) {
  ConnectionThreads threads("test-conn");
  std::atomic<int> seen{0};
  auto value = std::make_unique<int>(42);
  threads.Start([value = std::move(value), &seen] { seen = *value; });
  threads.JoinAll();
  EXPECT_EQ(seen.load(), 42);
}

TEST(ConnectionThreads, JoinAllWaitsForEveryThreadAndStartWorksAfterIt) {
  ConnectionThreads threads("test-conn");
  std::atomic<int> returned{0};
  Gate gate;
  for (int i = 0; i < 8; ++i) {
    threads.Start([&] {
      gate.Wait();
      ++returned;
    });
  }
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.Open();
  });
  threads.JoinAll();
  EXPECT_EQ(returned.load(), 8);
  opener.join();
  threads.Start([&] { ++returned; });
  threads.JoinAll();
  EXPECT_EQ(returned.load(), 9);
}

}  // namespace
}  // namespace gpusort
