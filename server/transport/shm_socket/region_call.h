// One call on the shared-memory socket (sort.proto, "Calls on the shared-memory socket"): a call record
// decoded, checked as a gRPC Sort or TopK on regions is (the same token, admission, validation, engine
// entry points, metrics and log: region_work.h), run on the thread that read it, and answered.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <mutex>
#include <span>
#include <vector>

#include "server/core/cancellation.h"
#include "server/service/auth.h"
#include "server/service/service_core.h"

namespace gpusort {

// Between the thread running a connection's call and the one that sees the caller hang up: a call whose
// caller went away is cancelled, as gRPC's OnCancel does.
class CallWatch {
 public:
  // The call starts; false (and the call cancelled) when the caller is already gone.
  bool Begin(Cancellation* call) {
    std::lock_guard lock(mutex_);
    current_ = call;
    if (gone_) call->Cancel();
    return !gone_;
  }
  void End() {
    std::lock_guard lock(mutex_);
    current_ = nullptr;
  }
  void CallerGone() {
    std::lock_guard lock(mutex_);
    gone_ = true;
    if (current_ != nullptr) current_->Cancel();
  }

 private:
  std::mutex mutex_;
  Cancellation* current_ = nullptr;
  bool gone_ = false;
};

struct RegionCallAnswer {
  std::vector<std::byte> record;  // the answer record to send back
  bool keep_open = true;          // false: the record broke the protocol; close after answering
};

// `auth` null: no tokens asked. `uid`: the caller's user id (SO_PEERCRED), its share of --max-inflight
// when tokens are off.
RegionCallAnswer AnswerRegionCall(ServiceCore& core, const TokenAuth* auth, uid_t uid,
                                  std::span<const std::byte> record, CallWatch& watch);

}  // namespace gpusort
