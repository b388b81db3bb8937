#include "server/transport/grpc/joint_record.h"

#include <algorithm>
#include <utility>

namespace gpusort {

JointRecord::~JointRecord() {
  std::lock_guard lock(mutex_);
  if (added_ > 0) RecordOnce();
}

void JointRecord::Add(const RequestRecord& part, Clock::time_point arrival) {
  std::lock_guard lock(mutex_);
  if (recorded_) return;
  if (added_++ == 0) {
    method_ = part.method;
    algorithm_ = part.algorithm;
    dtype_ = part.dtype;
  }
  const bool ok = part.code == "OK";
  if (!ok && (code_ == "OK" || (code_ == "ABORTED" && part.code != "ABORTED"))) {
    code_ = part.code;
    algorithm_ = part.algorithm;
  }
  first_arrival_ = std::min(first_arrival_, arrival);
  last_end_ = std::max(last_end_, arrival + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(part.seconds)));
  keys_ += part.keys;
  if (ok && part.stages != nullptr) {
    for (const StageTime& s : *part.stages) {
      auto same = std::find_if(stages_.begin(), stages_.end(), [&](const StageTime& t) { return t.stage == s.stage; });
      if (same == stages_.end()) {
        stages_.push_back(s);
      } else {
        same->seconds = std::max(same->seconds, s.seconds);
      }
    }
  }
  if (added_ == parts_) RecordOnce();
}

void JointRecord::RecordOnce() {
  if (recorded_) return;
  recorded_ = true;
  if (!record_) return;
  const bool ok = code_ == "OK";
  record_({.method = method_,
           .algorithm = algorithm_,
           .dtype = dtype_,
           .code = code_,
           .seconds = std::chrono::duration<double>(last_end_ - first_arrival_).count(),
           .keys = ok ? keys_ : 0,
           .stages = ok ? &stages_ : nullptr});
}

}  // namespace gpusort
