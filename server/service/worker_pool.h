// Threads that run jobs off gRPC's threads. The queue has no bound of its own: admission control
// (Admission) caps the calls in flight, and so the jobs that can wait here.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gpusort {

class WorkerPool {
 public:
  using Job = std::function<void()>;
  // `on_depth_change` is told the number of waiting jobs after each change (for a gauge).
  WorkerPool(int threads, std::function<void(std::size_t)> on_depth_change);
  ~WorkerPool();  // runs what is queued, then joins
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Submit(Job job);

 private:
  void Run();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::function<void(std::size_t)> on_depth_change_;
  std::vector<std::thread> threads_;
};

}  // namespace gpusort
