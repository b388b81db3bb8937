#include "server/service/open_call.h"

#include "server/service/service_core.h"

namespace gpusort {

OpenCall::~OpenCall() {
  if (!finished_.load()) core_.scheduler_.Release(call_);
}

absl::Status OpenCall::WaitForFirstMessage() { return core_.AdmitWaitingStream(call_, context_); }

absl::Status OpenCall::Start(Ticket ticket) {
  if (ticket == Ticket::kJobPart) return core_.AdmitIntoJob(call_, context_);
  return core_.Admit(call_, &context_);
}

absl::StatusOr<std::shared_ptr<void>> OpenCall::JobTicket() { return core_.scheduler_.AdmitJob(call_.caller); }

absl::Status OpenCall::Finish(const absl::Status& status) {
  if (finished_.exchange(true)) return status;
  return core_.Complete(call_, status);
}

}  // namespace gpusort
