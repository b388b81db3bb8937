// The parts of a parted Sort (proto StreamPart) are several SortStream calls but one request. Each
// part's end is added here instead of being recorded, and the request is recorded once, when its last
// part ends, or, when some part never joined (refused at its first message, or never sent), once the
// job is let go: one count in gpusort_requests_total and one latency sample, as for a Sort on one
// stream. A part that never joined its job is a call of its own and counts on its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "server/service/request_record.h"

namespace gpusort {

class JointRecord {
 public:
  using Clock = std::chrono::steady_clock;

  JointRecord(uint32_t parts, std::function<void(const RequestRecord&)> record)
      : parts_(parts), record_(std::move(record)) {}
  ~JointRecord();
  JointRecord(const JointRecord&) = delete;
  JointRecord& operator=(const JointRecord&) = delete;

  // One part ended: `part` as it would have been recorded alone, `arrival` when its call came.
  //   code:      OK when every part's is; else the first failure, where a part's own failure wins
  //              over ABORTED (what its siblings get because of it);
  //   seconds:   from the first part's arrival to the last part's reply;
  //   keys:      the parts' keys (0 unless the request succeeded);
  //   stages:    each stage's longest time in any part (what the caller waited for).
  void Add(const RequestRecord& part, Clock::time_point arrival);

 private:
  void RecordOnce();  // with mutex_ held

  const uint32_t parts_;
  const std::function<void(const RequestRecord&)> record_;
  std::mutex mutex_;
  uint32_t added_ = 0;
  bool recorded_ = false;
  std::string method_, algorithm_, dtype_, code_ = "OK";
  Clock::time_point first_arrival_ = Clock::time_point::max(), last_end_ = Clock::time_point::min();
  uint64_t keys_ = 0;
  std::vector<StageTime> stages_;
};

}  // namespace gpusort
