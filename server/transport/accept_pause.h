// A listener's pause after accept failed for want of descriptors or memory (issue 41). The connection
// waiting in the queue keeps the listening socket readable, so polling it again at once would spin: a
// whole core and a flood of log lines. Both socket listeners (the data port, the shared-memory socket)
// stop polling it for kPause and say so at most once a second, with how many pauses the line stands for.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpusort {

class AcceptPause {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kPause{100};

  // `listener` names it in the log ("data port").
  explicit AcceptPause(std::string_view listener) : listener_(listener) {}

  bool accepting(Clock::time_point now) const { return now >= until_; }
  // When accepting resumes (the past while accepting).
  Clock::time_point until() const { return until_; }
  // Accepting pauses for kPause because of `why` (printable: the server's own words).
  void Pause(const std::string& why);

 private:
  const std::string listener_;
  Clock::time_point until_{};
  Clock::time_point last_log_{};
  std::uint64_t since_log_ = 0;
};

}  // namespace gpusort
