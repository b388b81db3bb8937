// Ends streaming calls that stop moving. A stream holds a reactor, and once admitted a ticket of
// --max-inflight, for as long as it stays open; without a bound, streams that never send their first
// message, stop sending halfway, or stop reading their answer would hold those until the caller went
// away, and a few of them lock every other caller out. Each watched call says when it must end unless
// it moves (its deadline moves on with every message in or out); this thread checks a few times a
// second and tells a call whose deadline passed to end itself.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace gpusort {

class StreamWatchdog {
 public:
  using Clock = std::chrono::steady_clock;

  class Watched {
   public:
    virtual ~Watched() = default;
    // When the call must end unless it moves; Clock::time_point::max() while the server is the one
    // working (sorting), so never then. Called often, with the watchdog's lock held: read atomics only.
    virtual Clock::time_point WatchDeadline() const = 0;
    // The deadline passed: end the call. Runs on the watchdog's thread, at most once per call.
    virtual void WatchExpired() = 0;
  };

  explicit StreamWatchdog(std::chrono::milliseconds period = std::chrono::milliseconds(100));
  ~StreamWatchdog();
  StreamWatchdog(const StreamWatchdog&) = delete;
  StreamWatchdog& operator=(const StreamWatchdog&) = delete;

  void Watch(Watched* call);
  // After this returns the watchdog never touches `call` again (it waits for a WatchExpired that is
  // running for it, unless called from inside that WatchExpired).
  void Forget(Watched* call);

 private:
  void Run();

  const std::chrono::milliseconds period_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::set<Watched*> watched_;
  std::set<Watched*> expiring_;  // WatchExpired is running for these, without the lock
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest exists
};

}  // namespace gpusort
