#include "server/transport/shm_socket/region_call.h"

#include <string>
#include <type_traits>

#include "gpusort/v1/region_calls.h"
#include "server/core/status_macros.h"
#include "server/service/caller_identity.h"
#include "server/transport/grpc/grpc_status.h"
#include "server/transport/region_requests.h"
#include "server/transport/region_work.h"
#include "server/transport/request_decode.h"

namespace gpusort {
namespace {

namespace wire = v1::region_calls;

RegionCallAnswer Answer(const absl::Status& status, std::string_view response = {}, bool keep_open = true) {
  const grpc::Status answer = ToGrpcStatus(status);  // printable and bounded, as over gRPC
  return {.record = wire::EncodeAnswer(static_cast<std::uint32_t>(answer.error_code()), answer.error_message(),
                                       status.ok() ? response : std::string_view{}),
          .keep_open = keep_open};
}

absl::Status NeedsKeysRegion(bool has_keys_region) {
  if (has_keys_region) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "a call on the shared-memory socket names registered ranges (keys_region); keys carried in the request "
      "go over gRPC");
}

// The options' decoders by method, so that one RunOnRegions below serves both (as region_work.h's).
absl::StatusOr<SortSpec> DecodeOptions(const v1::SortOptions& options) { return DecodeSortOptions(options); }
absl::StatusOr<TopKSpec> DecodeOptions(const v1::TopKOptions& options) { return DecodeTopKOptions(options); }

// A call's work, as the gRPC reactor does it for regions (unary_calls.cc), through the service's one
// entry; on this connection's thread, whose caller waits for the answer. `refused`: why the call was
// refused before it asked for a ticket (its token, a caller already gone), or OK.
template <typename Request, typename Response>
RegionCallAnswer SubmitOnRegions(ServiceCore& core, CallState& call, const std::string& bytes,
                                 absl::Status refused) {
  Request request;
  if (refused.ok() && !request.ParseFromString(bytes)) {
    refused = absl::InvalidArgumentError("the call's request is not a " + Request::descriptor()->name());
  }
  std::remove_cvref_t<decltype(*DecodeOptions(request.options()))> spec;  // SortSpec or TopKSpec
  std::remove_cvref_t<decltype(*PrepareOnRegions(core, call, request, spec))> regions;
  std::string response;
  RegionCallAnswer answer;
  core.Submit(call, /*context=*/nullptr,
              {.refused = refused,
               .prepare = [&]() -> absl::StatusOr<Scheduler::Request> {
                 StageClock clock;
                 RETURN_IF_ERROR(NeedsKeysRegion(request.has_keys_region()));
                 RETURN_IF_ERROR(CheckNoStrayRegions(request));
                 ASSIGN_OR_RETURN(spec, DecodeOptions(request.options()));
                 call.dtype_label = DTypeName(spec.dtype);
                 call.requested = spec.algorithm;
                 ASSIGN_OR_RETURN(regions, PrepareOnRegions(core, call, request, spec));
                 call.report.AddStage(Stage::kValidate, clock.Seconds());
                 return Scheduler::Request{.keys = call.keys,
                                           .algorithm = spec.algorithm,
                                           .on_shared_memory = true,
                                           .on_callers_thread = true};
               },
               .run = [&]() -> absl::Status {
                 RETURN_IF_ERROR(call.cancellation.Check());
                 RETURN_IF_ERROR(WorkOnRegions(core, call, spec, regions));
                 Response reply;
                 core.FillInfo(call, reply.mutable_info());
                 response = reply.SerializeAsString();
                 return absl::OkStatus();
               },
               .reply = [&](const absl::Status& status) {
                 answer = Answer(status, status.ok() ? std::string_view(response) : std::string_view{});
               }});
  return answer;
}

Cancellation::Clock::time_point DeadlineOf(std::uint32_t timeout_ms) {
  if (timeout_ms == 0) return Cancellation::Clock::time_point::max();
  return Cancellation::Clock::now() + std::chrono::milliseconds(timeout_ms);
}

// The record's own faults: answered, and the connection closed (its next bytes cannot be trusted to
// start a record).
absl::Status CheckRecord(const std::optional<wire::Call>& call) {
  if (!call.has_value()) {
    return absl::InvalidArgumentError(
        "not a call record: expected a 32-byte head starting with \"GSCQ\" whose lengths add up to the message, "
        "at most " + std::to_string(wire::kMaxCallBytes) + " bytes (sort.proto, \"Calls on the shared-memory socket\")");
  }
  if (call->version != wire::kVersion) {
    return absl::InvalidArgumentError("call protocol version " + std::to_string(call->version) +
                                      " is not spoken here; this server speaks version " +
                                      std::to_string(wire::kVersion));
  }
  if (!call->reserved_zero) return absl::InvalidArgumentError("the call's reserved bytes must be zero");
  if (call->token.size() > wire::kMaxTokenBytes || call->request_id.size() > wire::kMaxRequestIdBytes) {
    return absl::InvalidArgumentError("the call's token is over " + std::to_string(wire::kMaxTokenBytes) +
                                      " bytes or its request id over " + std::to_string(wire::kMaxRequestIdBytes));
  }
  return absl::OkStatus();
}

}  // namespace

RegionCallAnswer AnswerRegionCall(ServiceCore& core, const TokenAuth* auth, uid_t uid,
                                  std::span<const std::byte> record, CallWatch& watch) {
  const std::optional<wire::Call> call = wire::DecodeCall(record);
  if (absl::Status s = CheckRecord(call); !s.ok()) return Answer(s, {}, /*keep_open=*/false);
  const bool sort = call->method == static_cast<std::uint16_t>(wire::Method::kSort);
  if (!sort && call->method != static_cast<std::uint16_t>(wire::Method::kTopK)) {
    return Answer(absl::UnimplementedError("call method " + std::to_string(call->method) +
                                           " is not offered; 1 (Sort) and 2 (TopK) are"));
  }
  CallState state(sort ? "Sort" : "TopK", call->request_id, DeadlineOf(call->timeout_ms));
  absl::Status refused = absl::OkStatus();
  if (auth != nullptr) {
    const std::string authorization = "Bearer " + call->token;  // as the gRPC metadata carries it
    const std::string_view header(authorization);
    refused = auth->CheckAuthorization(call->token.empty() ? nullptr : &header);  // counted, as over gRPC
    state.caller = TokenCallerIdentity(authorization);
  } else {
    state.caller = "unix-uid:" + std::to_string(uid);
  }
  if (!watch.Begin(&state.cancellation) && refused.ok()) {
    refused = absl::CancelledError("the caller went away before the call started");
  }
  RegionCallAnswer answer =
      sort ? SubmitOnRegions<v1::SortRequest, v1::SortResponse>(core, state, call->request, refused)
           : SubmitOnRegions<v1::TopKRequest, v1::TopKResponse>(core, state, call->request, refused);
  watch.End();
  return answer;
}

}  // namespace gpusort
