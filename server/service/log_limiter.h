// Rate limit for the log lines of failed and refused calls: a flood of refusals (a drain under load, an
// overloaded server, a caller retrying a bad request) must not flood the log too. Each kind of line
// (a status code) gets `per_second` lines a second; the rest are counted, and the next line of that
// kind that is written says how many were held back. The metrics count every call regardless.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace gpusort {

class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogLimiter(int per_second) : per_second_(per_second) {}

  // Whether to write a line of `kind` now; when it is written, `held_back` says how many lines of this
  // kind were not written since the last one that was.
  bool Allow(std::string_view kind, uint64_t* held_back, Clock::time_point now = Clock::now()) {
    std::lock_guard lock(mutex_);
    Window& w = windows_[std::string(kind)];
    if (now - w.start >= std::chrono::seconds(1)) {
      w.start = now;
      w.written = 0;
    }
    if (w.written >= per_second_) {
      ++w.held_back;
      return false;
    }
    ++w.written;
    *held_back = w.held_back;
    w.held_back = 0;
    return true;
  }

 private:
  struct Window {
    Clock::time_point start{};
    int written = 0;
    uint64_t held_back = 0;
  };
  const int per_second_;
  std::mutex mutex_;
  std::map<std::string, Window, std::less<>> windows_;  // one per status code: a handful
};

}  // namespace gpusort
