// Dynamic batching of small unary Sorts: requests with the same dtype, order and options that arrive
// within --batch-delay-us of the first one run together as one Backend::SortBatch (one GPU launch on the
// CUDA backend), and each caller still gets exactly its own keys back. A batch also closes early when
// it is full (--batch-max-requests, or a million keys in all).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "server/backend/backend.h"
#include "server/service/metrics.h"

namespace gpusort {

struct SortBatcherOptions {
  int delay_us = 0;           // 0: batching is off
  int max_requests = 64;      // per batch
  std::size_t max_keys = 16384;  // larger requests run alone: they fill the GPU by themselves
};

class SortBatcher {
 public:
  using RunFn = std::function<void(std::function<void()>)>;  // runs a job on a worker thread
  using DoneFn = std::function<void(absl::Status)>;

  SortBatcher(Backend& backend, Metrics& metrics, RunFn run, SortBatcherOptions options);
  ~SortBatcher();  // launches what is still waiting, then stops its thread

  bool enabled() const { return options_.delay_us > 0; }
  // Whether a request may wait for others: batching on, small, no values, not over shared memory.
  bool Eligible(const SortSpec& spec, std::size_t count) const;
  // Takes the request; `done` is called once, on a worker, after its answer is in its buffers.
  void Submit(const SortSpec& spec, const SortBuffers& buffers, ExecutionReport* report, DoneFn done);

 private:
  struct Waiting {
    SortBuffers buffers;
    ExecutionReport* report;
    DoneFn done;
    std::chrono::steady_clock::time_point arrived;
  };
  struct Open {
    SortSpec spec;
    std::vector<Waiting> requests;
    std::size_t keys = 0;
    std::chrono::steady_clock::time_point deadline;
  };
  using Key = std::tuple<int, int, bool, int, int>;  // dtype, order, stable, payload, algorithm
  static Key KeyOf(const SortSpec& spec);

  void Launch(Open batch);  // with the mutex not held
  void TimerLoop();

  Backend& backend_;
  Metrics& metrics_;
  RunFn run_;
  const SortBatcherOptions options_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<Key, Open> open_;
  std::size_t waiting_ = 0;
  bool stopping_ = false;
  std::thread timer_;
};

}  // namespace gpusort
