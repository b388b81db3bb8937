// What one call carries from arrival to reply: its id, clock, cancellation, the report of what ran,
// and the labels it is counted under.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <grpcpp/server_context.h>

#include "server/core/cancellation.h"
#include "server/core/execution_report.h"
#include "server/core/spec.h"
#include "server/transport/grpc/joint_record.h"

namespace gpusort {

struct CallState {
  CallState(std::string_view method, grpc::CallbackServerContext* context);
  // A call that came without gRPC (calls on the shared-memory socket): its id, if the caller's is usable
  // (else one made here), and its deadline.
  CallState(std::string_view method, std::string_view caller_request_id, Cancellation::Clock::time_point deadline);

  std::string_view method;
  std::string request_id;  // x-request-id from the caller, or made here
  std::chrono::steady_clock::time_point arrival = std::chrono::steady_clock::now();
  Cancellation cancellation;
  ExecutionReport report;
  std::string_view dtype_label = "unknown";
  Algorithm requested = Algorithm::kAuto;
  std::string caller;             // CallerIdentity, once the call asked for a ticket
  bool admitted = false;          // holds a ticket of --max-inflight
  bool waiting_stream = false;    // a stream holding a ticket of those waiting for their first message
  uint64_t keys = 0;
  // Set when the call is a part that joined a parted Sort: its end is added there, not recorded alone.
  std::shared_ptr<JointRecord> joint_record;

  double SecondsSinceArrival() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - arrival).count();
  }
};

}  // namespace gpusort
