#include "server/transport/grpc/socket_sort_call.h"

#include <future>
#include <memory>
#include <mutex>
#include <string>

#include "gpusort/v1/data_socket.h"
#include "server/core/status_macros.h"
#include "server/service/caller_identity.h"
#include "server/service/open_call.h"
#include "server/transport/grpc/grpc_hand_off.h"
#include "server/transport/grpc/grpc_status.h"
#include "server/transport/request_decode.h"

namespace gpusort {
namespace {

absl::Status CheckSocketSort(const SortSpec& spec, uint64_t total_keys, uint32_t parts, std::size_t max_request_bytes) {
  if (parts < 1 || parts > v1::data_socket::kMaxParts) {
    return absl::InvalidArgumentError("parts must be 1 to 64; got " + std::to_string(parts));
  }
  return CheckSortInParts(spec, total_keys, "total_keys " + std::to_string(total_keys), "SortOnSockets",
                          max_request_bytes);
}

class SocketSortCall final : public grpc::ServerWriteReactor<v1::SocketSortEvent> {
 public:
  SocketSortCall(ServiceCore& core, grpc::CallbackServerContext* context)
      : core_(core), context_(context), call_("SortOnSockets", context), open_(core, call_, *context) {}

  SocketSortCall* Start(const v1::SocketSortRequest& request) {
    absl::Status status = Prepare(request);
    ReleaseToGrpc(&call_.cancellation);  // the call is gRPC's from here: OnCancel may come
    if (call_.admitted) context_->AddInitialMetadata("x-request-id", call_.request_id);
    if (!status.ok()) {
      FinishWith(open_.Finish(status));
      return this;
    }
    first_.set_ticket(reinterpret_cast<const char*>(ticket_.data()), ticket_.size());
    first_.set_port(static_cast<uint32_t>(core_.socket_sorts().port()));
    StartOnGrpc(this, [&] { StartWrite(&first_); });
    return this;
  }

  void OnWriteDone(bool ok) override {
    AcquireFromGrpc(this);
    if (!ok) job_->Fail(absl::CancelledError("the caller stopped reading the call"));
    bool finish = false;
    {
      std::lock_guard lock(mutex_);
      first_written_ = true;
      finish = ended_;
    }
    if (finish) FinishJob();
  }

  void OnCancel() override {
    AcquireFromGrpc(&call_.cancellation);  // released when Start handed the call to gRPC
    call_.cancellation.Cancel();
    std::shared_ptr<SocketSortJob> job;
    {
      std::lock_guard lock(mutex_);
      job = job_;
    }
    if (job != nullptr) job->Fail(call_.cancellation.Check().ok() ? absl::CancelledError("the caller cancelled")
                                                                  : call_.cancellation.Check());
  }

  void OnDone() override {
    AcquireFromGrpc(this);  // the ticket is already forgotten: FinishJob did, before the call's end
    ServiceCore* core = &core_;
    delete this;
    ReleaseToGrpc(core);  // the server's shutdown acquires it before the core goes
  }

 private:
  absl::Status Prepare(const v1::SocketSortRequest& request) {
    RETURN_IF_ERROR(open_.Start(OpenCall::Ticket::kCall));
    StageClock clock;
    if (core_.socket_sorts().port() == 0) {
      return absl::FailedPreconditionError("this server has no data port (start it with --data-port)");
    }
    if (!request.has_options()) return absl::InvalidArgumentError("SortOnSockets needs options");
    ASSIGN_OR_RETURN(spec_, DecodeSortOptions(request.options()));
    call_.dtype_label = DTypeName(spec_.dtype);
    call_.requested = spec_.algorithm;
    RETURN_IF_ERROR(CheckSocketSort(spec_, request.total_keys(), request.parts(), core_.config().max_request_bytes));
    RETURN_IF_ERROR(core_.CheckSortAlgorithm(spec_.algorithm));
    RETURN_IF_ERROR(core_.CheckSortLimits(spec_, request.total_keys()));
    call_.keys = request.total_keys();
    ASSIGN_OR_RETURN(std::unique_ptr<PartedSortIngest> ingest,
                     core_.backend().StartPartedSortIngest(spec_, request.total_keys()));
    auto job = std::make_shared<SocketSortJob>(
        spec_, request.total_keys(), request.parts(), std::move(ingest), PeerHost(context_->peer()), call_.cancellation.deadline(),
        [this](const absl::Status& status, const ExecutionReport& report) { JobEnded(status, report); },
        // On the server's workers: a connection thread of the data port waits, the CPU engine's threads
        // are shared with every other call. Holds nothing of this reactor (the job may outlive it).
        [&scheduler = core_.scheduler()](std::function<absl::Status()> sort) {
          auto done = std::make_shared<std::promise<absl::Status>>();
          std::future<absl::Status> sorted = done->get_future();
          scheduler.EnqueueWork([done, sort = std::move(sort)] { done->set_value(sort()); });
          return sorted.get();
        });
    ASSIGN_OR_RETURN(ticket_, core_.socket_sorts().Add(job));
    call_.report.AddStage(Stage::kValidate, clock.Seconds());
    std::lock_guard lock(mutex_);
    job_ = std::move(job);
    return absl::OkStatus();
  }

  // From the job's last part, or its first failure (any thread). The call ends once its first event
  // has been written too.
  void JobEnded(const absl::Status& status, const ExecutionReport& report) {
    bool finish = false;
    {
      std::lock_guard lock(mutex_);
      end_status_ = status;
      if (status.ok()) {
        call_.report.algorithm = report.algorithm;
        call_.report.backend = report.backend;
        call_.report.device = report.device;
        for (const StageTime& stage : report.stages) call_.report.stages.push_back(stage);
      }
      ended_ = true;
      finish = first_written_;
    }
    if (finish) FinishJob();
  }

  // Last touch of the call: gRPC may delete it as soon as the answer is handed over. The ticket is
  // forgotten first, so that a caller who has the call's end can no longer use it.
  void FinishJob() {
    core_.socket_sorts().Forget(ticket_);
    const absl::Status status = open_.Finish(end_status_);
    if (!status.ok()) return FinishWith(status);
    core_.FillInfo(call_, last_.mutable_info());
    StartOnGrpc(this, [&] { StartWriteAndFinish(&last_, grpc::WriteOptions(), grpc::Status::OK); });
  }

  void FinishWith(const absl::Status& status) {
    const grpc::Status answer = ToGrpcStatus(status);
    StartOnGrpc(this, [&] { Finish(answer); });
  }

  ServiceCore& core_;
  grpc::CallbackServerContext* context_;
  CallState call_;
  OpenCall open_;  // the call's ticket and its completion
  SortSpec spec_;
  SocketSorts::Ticket ticket_{};
  v1::SocketSortEvent first_, last_;

  std::mutex mutex_;
  std::shared_ptr<SocketSortJob> job_;  // set once, by Start (OnCancel may read it from another thread)
  bool first_written_ = false, ended_ = false;
  absl::Status end_status_;
};

}  // namespace

grpc::ServerWriteReactor<v1::SocketSortEvent>* StartSocketSortCall(ServiceCore& core,
                                                                   grpc::CallbackServerContext* context,
                                                                   const v1::SocketSortRequest* request) {
  return (new SocketSortCall(core, context))->Start(*request);
}

}  // namespace gpusort
