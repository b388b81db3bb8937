// Caps the calls in flight: a call either gets a ticket at once or is refused (RESOURCE_EXHAUSTED),
// so overload never builds an unbounded queue. Also the drain's "wait until idle".
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace gpusort {

class Admission {
 public:
  explicit Admission(int limit) : limit_(limit) {}

  bool TryAcquire() {
    std::lock_guard lock(mutex_);
    if (inflight_ >= limit_) return false;
    ++inflight_;
    return true;
  }
  void Release() {
    std::lock_guard lock(mutex_);
    if (--inflight_ == 0) idle_.notify_all();
  }
  int inflight() const {
    std::lock_guard lock(mutex_);
    return inflight_;
  }
  // True when nothing was in flight before the timeout.
  bool WaitIdle(std::chrono::duration<double> timeout) {
    std::unique_lock lock(mutex_);
    return idle_.wait_for(lock, timeout, [this] { return inflight_ == 0; });
  }

 private:
  const int limit_;
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  int inflight_ = 0;
};

}  // namespace gpusort
