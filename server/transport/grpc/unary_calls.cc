#include "server/transport/grpc/unary_calls.h"

#include <string>

#include "server/core/status_macros.h"
#include "server/transport/grpc/grpc_hand_off.h"
#include "server/transport/grpc/grpc_status.h"
#include "server/transport/region_requests.h"
#include "server/transport/region_work.h"
#include "server/transport/request_decode.h"

namespace gpusort {
namespace {

// Shared life cycle: admission, a reply exactly once, cancellation forwarded to the work.
class UnaryCall : public grpc::ServerUnaryReactor {
 public:
  UnaryCall(ServiceCore& core, grpc::CallbackServerContext* context, std::string_view method)
      : core_(core), context_(context), call_(method, context) {}

  void OnCancel() override {
    AcquireFromGrpc(&call_.cancellation);  // released when Start handed the call to gRPC
    call_.cancellation.Cancel();
  }
  void OnDone() override {
    AcquireFromGrpc(this);
    ServiceCore* core = &core_;
    delete this;
    ReleaseToGrpc(core);  // the server's shutdown acquires it before the core goes
  }

  // Hands the call to the service's one entry: it validates on the gRPC thread (bad requests are
  // answered at once), then runs here or on a worker (scheduler.h), and answers.
  UnaryCall* Start() {
    core_.Submit(call_, context_,
                 {.admitted =
                      [this] {
                        // With the answer's headers. A call refused at admission (draining, too many in
                        // flight) answers Trailers-Only, with no headers: gRPC commits a call, never to
                        // retry it, once its answer's headers arrive, so this keeps a refusal by a
                        // draining replica retryable on another (ClientOptions::retry).
                        context_->AddInitialMetadata("x-request-id", call_.request_id);
                      },
                  .prepare = [this]() -> absl::StatusOr<Scheduler::Request> {
                    RETURN_IF_ERROR(Prepare());
                    return Describe();
                  },
                  .run = [this] { return Run(); },
                  .reply = [this](const absl::Status& answer) { Reply(answer); }});
    ReleaseToGrpc(&call_.cancellation);  // the call is gRPC's from here: OnCancel may come
    return this;
  }

 protected:
  virtual absl::Status Prepare() = 0;  // the call holds its ticket
  virtual absl::Status Run() = 0;
  // What the scheduler needs to place this call: what only the call knows (its spec, size, regions).
  virtual Scheduler::Request Describe() = 0;

  // Last thing a call does: gRPC may delete it as soon as Finish is called. `answer` is what the
  // service's Complete returned (with the request id where it helps: INTERNAL).
  void Reply(const absl::Status& answer) {
    const grpc::Status finish = ToGrpcStatus(answer);
    StartOnGrpc(this, [&] { Finish(finish); });
  }

  absl::Status RequestFits(std::size_t bytes) const {
    if (bytes <= core_.config().max_request_bytes) return absl::OkStatus();
    return absl::ResourceExhaustedError("the request holds " + std::to_string(bytes) +
                                        " bytes, over the server's limit of " +
                                        std::to_string(core_.config().max_request_bytes));
  }

  absl::Status ResponseFits(std::size_t bytes, std::string_view stream_method) const {
    if (bytes <= core_.config().max_message_bytes) return absl::OkStatus();
    return absl::ResourceExhaustedError(
        "the answer would be " + std::to_string(bytes) + " bytes, over the server's " +
        std::to_string(core_.config().max_message_bytes) + "-byte message limit; use " +
        std::string(stream_method) + " (the gpusort client library does so by itself)");
  }

  // Shared memory is for callers on this host: a region id alone must not open it to the network.
  absl::Status LocalCaller() const {
    if (IsLocalPeer(context_->peer())) return absl::OkStatus();
    return absl::PermissionDeniedError("shared-memory requests are only for callers on the server's host");
  }

  ServiceCore& core_;
  grpc::CallbackServerContext* context_;
  CallState call_;
};

class SortCall final : public UnaryCall {
 public:
  SortCall(ServiceCore& core, grpc::CallbackServerContext* context, const v1::SortRequest* request,
           v1::SortResponse* response)
      : UnaryCall(core, context, "Sort"), request_(request), response_(response) {}

 private:
  absl::Status Prepare() override {
    StageClock clock;
    RETURN_IF_ERROR(RequestFits(request_->keys().size() + request_->values().size()));
    RETURN_IF_ERROR(CheckNoStrayRegions(*request_));
    ASSIGN_OR_RETURN(spec_, DecodeSortOptions(request_->options()));
    call_.dtype_label = DTypeName(spec_.dtype);
    call_.requested = spec_.algorithm;
    if (request_->has_keys_region()) {
      RETURN_IF_ERROR(LocalCaller());
      ASSIGN_OR_RETURN(regions_, PrepareOnRegions(core_, call_, *request_, spec_));
      call_.report.AddStage(Stage::kValidate, clock.Seconds());
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(call_.keys, CheckSortSizes(spec_, request_->keys().size(),
                                                request_->values().size()));
    RETURN_IF_ERROR(ResponseFits(SortResponseBytes(spec_, call_.keys), "SortStream"));
    RETURN_IF_ERROR(core_.CheckSortAlgorithm(spec_.algorithm));
    RETURN_IF_ERROR(core_.CheckSortLimits(spec_, call_.keys));
    call_.report.AddStage(Stage::kValidate, clock.Seconds());
    return absl::OkStatus();
  }

  absl::Status Run() override {
    RETURN_IF_ERROR(call_.cancellation.Check());
    if (regions_.keys.region != nullptr) return RunOnRegions();
    SortBuffers buffers = PrepareBuffers();
    RETURN_IF_ERROR(RunSort(core_.backend(), spec_, buffers, call_.cancellation, call_.report));
    core_.FillInfo(call_, response_->mutable_info());
    return absl::OkStatus();
  }

  Scheduler::Request Describe() override {
    return {.keys = call_.keys,
            .algorithm = spec_.algorithm,
            .on_shared_memory = regions_.keys.region != nullptr};
  }

  // The reply's buffers: the keys are sorted in place in the reply. gRPC built the request as a
  // mutable object and never reads it again, so its buffer is moved rather than copied (256 MiB costs
  // ~60 ms).
  SortBuffers PrepareBuffers() {
    StageClock clock;
    const std::size_t n = call_.keys;
    response_->mutable_keys()->swap(*const_cast<v1::SortRequest*>(request_)->mutable_keys());
    SortBuffers buffers;
    buffers.count = n;
    buffers.keys = std::as_writable_bytes(
        std::span(response_->mutable_keys()->data(), response_->keys().size()));
    if (spec_.payload == SortPayload::kValues) {
      buffers.values = std::as_bytes(std::span(request_->values().data(), request_->values().size()));
      response_->mutable_values()->resize(request_->values().size());
      buffers.values_out = std::as_writable_bytes(
          std::span(response_->mutable_values()->data(), response_->values().size()));
    } else if (spec_.payload == SortPayload::kIndices) {
      response_->mutable_indices()->resize(n * sizeof(int64_t));
      buffers.indices_out =
          std::span(reinterpret_cast<int64_t*>(response_->mutable_indices()->data()), n);
    }
    call_.report.AddStage(Stage::kPrepare, clock.Seconds());
    return buffers;
  }

  // Keys from one shared-memory range, answers into others; the reply carries only the info.
  absl::Status RunOnRegions() {
    RETURN_IF_ERROR(WorkOnRegions(core_, call_, spec_, regions_));
    core_.FillInfo(call_, response_->mutable_info());
    return absl::OkStatus();
  }

  const v1::SortRequest* request_;
  v1::SortResponse* response_;
  SortSpec spec_;
  SortRegions regions_;
};

class TopKCall final : public UnaryCall {
 public:
  TopKCall(ServiceCore& core, grpc::CallbackServerContext* context, const v1::TopKRequest* request,
           v1::TopKResponse* response)
      : UnaryCall(core, context, "TopK"), request_(request), response_(response) {}

 private:
  absl::Status Prepare() override {
    StageClock clock;
    RETURN_IF_ERROR(RequestFits(request_->keys().size()));
    RETURN_IF_ERROR(CheckNoStrayRegions(*request_));
    ASSIGN_OR_RETURN(spec_, DecodeTopKOptions(request_->options()));
    call_.dtype_label = DTypeName(spec_.dtype);
    call_.requested = spec_.algorithm;
    if (request_->has_keys_region()) {
      RETURN_IF_ERROR(LocalCaller());
      ASSIGN_OR_RETURN(regions_, PrepareOnRegions(core_, call_, *request_, spec_));
      call_.report.AddStage(Stage::kValidate, clock.Seconds());
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(call_.keys, CheckTopKShape(spec_, request_->keys().size()));
    RETURN_IF_ERROR(ResponseFits(TopKResponseBytes(spec_), "TopKStream"));
    RETURN_IF_ERROR(core_.CheckTopKAlgorithm(spec_.algorithm));
    RETURN_IF_ERROR(core_.CheckTopKLimits(spec_, call_.keys));
    call_.report.AddStage(Stage::kValidate, clock.Seconds());
    return absl::OkStatus();
  }

  absl::Status Run() override {
    RETURN_IF_ERROR(call_.cancellation.Check());
    const std::size_t results = spec_.results();
    TopKBuffers buffers;
    buffers.count = call_.keys;
    if (regions_.keys.region != nullptr) {  // shared memory: read and write the ranges in place
      RETURN_IF_ERROR(WorkOnRegions(core_, call_, spec_, regions_));
      core_.FillInfo(call_, response_->mutable_info());
      return absl::OkStatus();
    }
    buffers.keys = std::as_bytes(std::span(request_->keys().data(), request_->keys().size()));
    if (spec_.wants_values()) {
      response_->mutable_values()->resize(results * ElementSize(spec_.dtype));
      buffers.values_out = std::as_writable_bytes(
          std::span(response_->mutable_values()->data(), response_->values().size()));
    }
    if (spec_.wants_indices()) {
      response_->mutable_indices()->resize(results * sizeof(int64_t));
      buffers.indices_out =
          std::span(reinterpret_cast<int64_t*>(response_->mutable_indices()->data()), results);
    }
    RETURN_IF_ERROR(RunTopK(core_.backend(), spec_, buffers, call_.cancellation, call_.report));
    core_.FillInfo(call_, response_->mutable_info());
    return absl::OkStatus();
  }

  Scheduler::Request Describe() override {
    return {.keys = call_.keys, .algorithm = spec_.algorithm, .on_shared_memory = regions_.keys.region != nullptr};
  }

  const v1::TopKRequest* request_;
  v1::TopKResponse* response_;
  TopKSpec spec_;
  TopKRegions regions_;
};

}  // namespace

grpc::ServerUnaryReactor* StartSortCall(ServiceCore& core, grpc::CallbackServerContext* context,
                                        const v1::SortRequest* request,
                                        v1::SortResponse* response) {
  return (new SortCall(core, context, request, response))->Start();
}

grpc::ServerUnaryReactor* StartTopKCall(ServiceCore& core, grpc::CallbackServerContext* context,
                                        const v1::TopKRequest* request,
                                        v1::TopKResponse* response) {
  return (new TopKCall(core, context, request, response))->Start();
}

}  // namespace gpusort
