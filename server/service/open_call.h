// What a call that holds its ticket across many events (a SortStream or TopKStream, a SortOnSockets call)
// has of the service: its tickets, taken in the order its life needs them, and its completion, once.
// Transports take tickets and complete calls only through this or ServiceCore::Submit (issue 42): a
// stream chooses when (its start, its first message, its end), the service decides whether, and counts.
// Why a handle and not Submit: a stream's reading and writing are gRPC events the transport owns;
// Submit with continuations would pull them into the service (docs/design/one-house.md, question 1).
#pragma once

#include <atomic>
#include <memory>

#include <grpcpp/server_context.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/service/call_state.h"

namespace gpusort {

class ServiceCore;

class OpenCall {
 public:
  // `call` and `context` outlive this (the transport's call holds all three, this declared last).
  OpenCall(ServiceCore& core, CallState& call, const grpc::CallbackServerContext& context)
      : core_(core), call_(call), context_(context) {}
  ~OpenCall();  // a call that never finished gives its tickets back (uncounted: it never answered)
  OpenCall(const OpenCall&) = delete;
  OpenCall& operator=(const OpenCall&) = delete;

  // A ticket of those held by streams waiting for their first message (a stream, at its start):
  // UNAVAILABLE while draining, RESOURCE_EXHAUSTED past as many again as --max-inflight or the caller's share.
  absl::Status WaitForFirstMessage();

  // The call's work starts. kCall: a ticket of --max-inflight. kJobPart: a part that joins a job holding
  // the one ticket for all its parts (a Sort in parts) takes none of its own. Either way the waiting
  // stream's ticket goes back.
  enum class Ticket { kCall, kJobPart };
  absl::Status Start(Ticket ticket);

  // The ticket a job this call starts holds for all its calls (the first part of a Sort in parts);
  // given back when the job's last copy goes.
  absl::StatusOr<std::shared_ptr<void>> JobTicket();

  // Counts and logs the call, gives back its tickets, and returns what to answer with (the request id
  // named in the server's own failures). Once: a second call returns `status` and counts nothing.
  absl::Status Finish(const absl::Status& status);

 private:
  ServiceCore& core_;
  CallState& call_;
  const grpc::CallbackServerContext& context_;
  std::atomic<bool> finished_{false};
};

}  // namespace gpusort
