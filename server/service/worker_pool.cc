#include "server/service/worker_pool.h"

#include "server/core/thread_name.h"

namespace gpusort {

WorkerPool::WorkerPool(int threads, std::function<void(std::size_t)> on_depth_change)
    : on_depth_change_(std::move(on_depth_change)) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads_.reserve(static_cast<std::size_t>(threads));
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::Submit(Job job) {
  std::size_t depth;
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
    depth = jobs_.size();
  }
  if (on_depth_change_) on_depth_change_(depth);
  ready_.notify_one();
}

void WorkerPool::Run() {
  NameThisThread("gs-worker");
  for (;;) {
    Job job;
    std::size_t depth;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left to run
      job = std::move(jobs_.front());
      jobs_.pop_front();
      depth = jobs_.size();
    }
    if (on_depth_change_) on_depth_change_(depth);
    job();
  }
}

}  // namespace gpusort
