// The threads that serve a listener's connections, one a connection: both socket protocols (the data
// port, calls on the shared-memory socket) block on their connection's socket and answer on it, so a
// connection is served by a thread of its own. This holds those threads: started, joined once they
// return (by whoever reaps next, never by the thread itself), and all joined when it ends.
//
// What a connection needs besides its thread (its descriptor, its caller, what a watcher may cancel) is
// its owner's; the owner counts its connections against its own limits and wakes its threads to stop.
#pragma once

#include <atomic>
#include <cstddef>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "server/core/thread_name.h"

namespace gpusort {

class ConnectionThreads {
 public:
  explicit ConnectionThreads(std::string thread_name) : thread_name_(std::move(thread_name)) {}
  // Joins every thread: the owner must have told them to stop (each blocks on its own socket).
  ~ConnectionThreads() { JoinAll(); }
  ConnectionThreads(const ConnectionThreads&) = delete;
  ConnectionThreads& operator=(const ConnectionThreads&) = delete;

  // Runs serve() on a new thread; what it captures (a connection's descriptor, say) is destroyed on that
  // thread once serve returns. Joins the threads that returned first.
  template <typename Serve>
  void Start(Serve serve) {
    std::lock_guard lock(mutex_);
    ReapFinishedLocked();
    Entry& entry = entries_.emplace_back();
    entry.thread = std::thread([this, &entry, serve = std::move(serve)]() mutable {
      NameThisThread(thread_name_.c_str());
      {
        Serve local = std::move(serve);
        local();
      }
      entry.finished.store(true);
    });
  }
  // The threads started and not yet returned.
  std::size_t running() const;
  // Joins the threads that returned.
  void ReapFinished();
  // Joins every thread (the owner stopped them first); Start may follow.
  void JoinAll();

 private:
  struct Entry {
    std::thread thread;
    std::atomic<bool> finished{false};
  };
  void ReapFinishedLocked();

  const std::string thread_name_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;
};

}  // namespace gpusort
