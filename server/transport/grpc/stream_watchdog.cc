#include "server/transport/grpc/stream_watchdog.h"

#include "server/core/thread_name.h"

namespace gpusort {

StreamWatchdog::StreamWatchdog(std::chrono::milliseconds period) : period_(period), thread_([this] { Run(); }) {}

StreamWatchdog::~StreamWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void StreamWatchdog::Watch(Watched* call) {
  std::lock_guard lock(mutex_);
  watched_.insert(call);
}

void StreamWatchdog::Forget(Watched* call) {
  std::unique_lock lock(mutex_);
  watched_.erase(call);
  if (std::this_thread::get_id() == thread_.get_id()) return;  // from inside its own WatchExpired
  changed_.wait(lock, [&] { return !expiring_.contains(call); });
}

void StreamWatchdog::Run() {
  NameThisThread("gs-watchdog");
  std::unique_lock lock(mutex_);
  while (!stop_) {
    changed_.wait_for(lock, period_, [this] { return stop_; });
    if (stop_) break;
    const Clock::time_point now = Clock::now();
    std::vector<Watched*> expired;
    for (Watched* call : watched_) {
      if (call->WatchDeadline() <= now) expired.push_back(call);
    }
    for (Watched* call : expired) {
      watched_.erase(call);  // once: a call is told to end at most once
      expiring_.insert(call);
    }
    if (expired.empty()) continue;
    lock.unlock();
    for (Watched* call : expired) call->WatchExpired();
    lock.lock();
    for (Watched* call : expired) expiring_.erase(call);
    changed_.notify_all();
  }
}

}  // namespace gpusort
