#include "server/transport/connection_threads.h"

namespace gpusort {

std::size_t ConnectionThreads::running() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const Entry& entry : entries_) n += entry.finished.load() ? 0 : 1;
  return n;
}

void ConnectionThreads::ReapFinished() {
  std::lock_guard lock(mutex_);
  ReapFinishedLocked();
}

void ConnectionThreads::ReapFinishedLocked() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (!it->finished.load()) {
      ++it;
      continue;
    }
    it->thread.join();  // it has returned, or is returning
    it = entries_.erase(it);
  }
}

void ConnectionThreads::JoinAll() {
  std::lock_guard lock(mutex_);
  for (Entry& entry : entries_) {
    if (entry.thread.joinable()) entry.thread.join();
  }
  entries_.clear();
}

}  // namespace gpusort
