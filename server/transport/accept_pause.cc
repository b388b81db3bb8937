#include "server/transport/accept_pause.h"

#include <spdlog/spdlog.h>

namespace gpusort {

void AcceptPause::Pause(const std::string& why) {
  const Clock::time_point now = Clock::now();
  until_ = now + kPause;
  ++since_log_;
  if (now - last_log_ < std::chrono::seconds(1)) return;  // at most a line a second
  spdlog::warn("{}: {}; accepting again in {} ms ({} such pause(s) since the last line)", listener_, why,
               kPause.count(), since_log_);
  last_log_ = now;
  since_log_ = 0;
}

}  // namespace gpusort
