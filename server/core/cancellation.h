// Lets long work stop early when its caller has gone or its deadline has passed. Backends call
// Check() between stages; the service flips Cancel() from gRPC's OnCancel.
#pragma once

#include <atomic>
#include <chrono>

#include "absl/status/status.h"

namespace gpusort {

class Cancellation {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Cancellation(Clock::time_point deadline = Clock::time_point::max())
      : deadline_(deadline) {}

  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  Clock::time_point deadline() const { return deadline_; }

  // OK while the work is still wanted; CANCELLED or DEADLINE_EXCEEDED otherwise.
  absl::Status Check() const {
    // The deadline first: gRPC also cancels a call whose deadline passed, and the caller should
    // learn the real reason.
    if (deadline_ != Clock::time_point::max() && Clock::now() >= deadline_)
      return absl::DeadlineExceededError("the request's deadline passed before it finished");
    if (cancelled()) return absl::CancelledError("the caller cancelled the request");
    return absl::OkStatus();
  }

 private:
  std::atomic<bool> cancelled_{false};
  Clock::time_point deadline_;
};

}  // namespace gpusort
