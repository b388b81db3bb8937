// A backend the tests steer: each Sort/TopK waits until released (or until its call is cancelled or
// out of time), and counts what it saw. Used for admission, deadline, cancel and drain tests, where
// the real backend would finish too fast to observe.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "server/backend/backend.h"
#include "tests/support/own_memory_backend.h"

namespace gpusort::testing {

class ScriptedBackend : public OwnMemoryBackend {
 public:
  struct Counters {
    std::atomic<bool> release{false};   // set it to let every waiting and future job finish
    std::atomic<int> started{0};
    std::atomic<int> stopped_early{0};  // saw cancellation or the deadline while waiting
  };

  explicit ScriptedBackend(std::shared_ptr<Counters> counters) : counters_(std::move(counters)) {}

  BackendKind kind() const override { return BackendKind::kCpu; }
  std::string device() const override { return "scripted test backend"; }
  std::vector<Algorithm> sort_algorithms() const override { return {Algorithm::kCpu}; }
  std::vector<Algorithm> topk_algorithms() const override { return {Algorithm::kCpu}; }

  absl::Status Sort(const SortSpec&, const SortBuffers& b, const Cancellation& c,
                    ExecutionReport& report) override {
    report.algorithm = Algorithm::kCpu;
    absl::Status s = Hold(c);
    if (s.ok()) {  // a trivially right answer for u32 keys, so replies can be checked
      auto* keys = reinterpret_cast<uint32_t*>(b.keys.data());
      std::sort(keys, keys + b.count);
    }
    return s;
  }
  absl::Status TopK(const TopKSpec&, const TopKBuffers&, const Cancellation& c,
                    ExecutionReport& report) override {
    report.algorithm = Algorithm::kCpu;
    return Hold(c);
  }

 private:
  absl::Status Hold(const Cancellation& c) {
    counters_->started++;
    while (!counters_->release.load()) {
      absl::Status s = c.Check();
      if (!s.ok()) {
        counters_->stopped_early++;
        return s;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return absl::OkStatus();
  }

  std::shared_ptr<Counters> counters_;
};

}  // namespace gpusort::testing
