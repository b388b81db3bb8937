// Caps the calls in flight, in total and per caller: a call either gets a ticket at once or is refused
// (RESOURCE_EXHAUSTED), so overload never builds an unbounded queue, and no one caller can take every
// ticket and lock the others out. Also the drain's "wait until idle".
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace gpusort {

// Why TryAcquire said no.
enum class AdmissionRefusal { kNone, kTotal, kCaller };

class Admission {
 public:
  // `per_caller_limit` is at most `limit` and at least 1.
  Admission(int limit, int per_caller_limit) : limit_(limit), per_caller_limit_(per_caller_limit) {}

  AdmissionRefusal TryAcquire(const std::string& caller) {
    std::lock_guard lock(mutex_);
    if (inflight_->load(std::memory_order_relaxed) >= limit_) return AdmissionRefusal::kTotal;
    int& mine = per_caller_[caller];
    if (mine >= per_caller_limit_) return AdmissionRefusal::kCaller;
    ++mine;
    inflight_->fetch_add(1, std::memory_order_relaxed);
    return AdmissionRefusal::kNone;
  }
  void Release(const std::string& caller) {
    std::lock_guard lock(mutex_);
    if (auto it = per_caller_.find(caller); it != per_caller_.end() && --it->second <= 0) per_caller_.erase(it);
    if (inflight_->fetch_sub(1, std::memory_order_relaxed) == 1) idle_.notify_all();
  }
  int inflight() const { return inflight_->load(std::memory_order_relaxed); }
  // The same count, read without the lock by whoever routes by load (Backend::WatchCallsInFlight);
  // shared, so a reader may outlive the admission.
  std::shared_ptr<const std::atomic<int>> in_flight_now() const { return inflight_; }
  int limit() const { return limit_; }
  int per_caller_limit() const { return per_caller_limit_; }
  // True when nothing was in flight before the timeout.
  bool WaitIdle(std::chrono::duration<double> timeout) {
    std::unique_lock lock(mutex_);
    return idle_.wait_for(lock, timeout, [this] { return inflight_->load(std::memory_order_relaxed) == 0; });
  }

 private:
  const int limit_;
  const int per_caller_limit_;
  std::mutex mutex_;
  std::condition_variable idle_;
  // The tickets given and not yet given back: changed only under mutex_, read without it by
  // in_flight_now()'s holders, which may outlive this admission (hence shared).
  const std::shared_ptr<std::atomic<int>> inflight_ = std::make_shared<std::atomic<int>>(0);
  std::unordered_map<std::string, int> per_caller_;  // callers holding tickets now (no empty entries)
};

}  // namespace gpusort
