#include "server/service/service_core.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "server/core/caller_text.h"
#include "server/core/status_macros.h"
#include "server/service/caller_identity.h"
#include "server/transport/grpc/grpc_status.h"
#include "server/transport/request_decode.h"

namespace gpusort {
namespace {

bool Has(const std::vector<Algorithm>& list, Algorithm a) {
  return a == Algorithm::kAuto || std::find(list.begin(), list.end(), a) != list.end();
}

v1::Backend ToProto(BackendKind kind) {
  return kind == BackendKind::kCuda ? v1::BACKEND_CUDA : v1::BACKEND_CPU;
}

// Caller mistakes are routine (info); the server's own failures are not.
spdlog::level::level_enum LogLevelFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk: return spdlog::level::debug;
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kDataLoss: return spdlog::level::err;
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kUnavailable: return spdlog::level::warn;
    default: return spdlog::level::info;
  }
}

// Log lines of failed calls written per status code each second; the rest are counted (LogLimiter).
constexpr int kFailureLogLinesPerSecond = 20;

// The server's own failures name the request id (in front: ToGrpcStatus cuts long messages at the end),
// so that the caller can point at this call's lines in the server's log. Caller mistakes do not need
// it: their message says what to fix.
absl::Status WithRequestId(const CallState& call, const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kDataLoss: break;
    default: return status;
  }
  return absl::Status(status.code(), "request id " + CallerText(call.request_id, kRequestIdMaxBytes) + ": " +
                                          std::string(status.message()));
}

}  // namespace

ServiceCore::ServiceCore(const ServerConfig& config, Backend& backend, Metrics& metrics,
                         BackendFailedFn backend_failed, DevicesChangedFn devices_changed)
    : config_(config),
      backend_(backend),
      metrics_(metrics),
      failure_log_(kFailureLogLinesPerSecond),
      backend_failed_(std::move(backend_failed)),
      devices_changed_(std::move(devices_changed)),
      regions_(backend, {.max_regions = config.shm_max_regions, .max_total_bytes = config.shm_max_bytes}),
      parted_sorts_(static_cast<std::size_t>(std::max(1, config.max_inflight)),
                    [&metrics](const RequestRecord& record) { metrics.Record(record); }),
      scheduler_(config, backend, metrics) {}

std::string ServiceCore::CallerOf(CallState& call, const grpc::CallbackServerContext& context) const {
  if (call.caller.empty()) call.caller = CallerIdentity(context, !config_.auth_tokens_file.empty());
  return call.caller;
}

absl::Status ServiceCore::Open(CallState& call, const grpc::CallbackServerContext* context) {
  if (draining()) {
    last_drain_refusal_.store(std::chrono::steady_clock::now().time_since_epoch().count());
    return absl::UnavailableError("the server is shutting down; retry on another replica");
  }
  RETURN_IF_ERROR(BackendHealth());
  if (context != nullptr) (void)CallerOf(call, *context);  // the scheduler's tickets are per caller
  return absl::OkStatus();
}

absl::Status ServiceCore::Admit(CallState& call, const grpc::CallbackServerContext* context) {
  RETURN_IF_ERROR(Open(call, context));
  return scheduler_.Admit(call);
}

absl::Status ServiceCore::AdmitIntoJob(CallState& call, const grpc::CallbackServerContext& context) {
  RETURN_IF_ERROR(Open(call, &context));
  scheduler_.Release(call);
  return absl::OkStatus();
}

absl::Status ServiceCore::AdmitWaitingStream(CallState& call, const grpc::CallbackServerContext& context) {
  RETURN_IF_ERROR(Open(call, &context));
  return scheduler_.AdmitWaitingStream(call);
}

void ServiceCore::Submit(CallState& call, const grpc::CallbackServerContext* context, WholeCall whole) {
  if (!whole.refused.ok()) return whole.reply(Refuse(call, whole.refused));
  absl::Status admitted = Admit(call, context);
  if (admitted.ok() && whole.admitted) whole.admitted();
  absl::StatusOr<Scheduler::Request> request =
      admitted.ok() ? whole.prepare() : absl::StatusOr<Scheduler::Request>(admitted);
  if (!request.ok()) return whole.reply(Complete(call, request.status()));
  request->run = [this, &call, run = std::move(whole.run), reply = std::move(whole.reply)] {
    reply(Complete(call, run()));  // the last touch: the call may be gone after reply
  };
  scheduler_.Enqueue(call, *std::move(request));
}

absl::Status ServiceCore::BackendHealth() {
  const int lost = backend_.devices_lost();
  if (lost != devices_lost_seen_.load(std::memory_order_relaxed) &&
      devices_lost_seen_.exchange(lost) != lost) {
    for (const Backend::DeviceServing& d : backend_.devices()) {
      if (!d.status.ok()) spdlog::error("GPU {} stopped serving ({})", d.device, std::string(d.status.message()));
    }
    if (devices_changed_) devices_changed_();
  }
  absl::Status health = backend_.Healthy();
  if (!health.ok() && !backend_failed_seen_.exchange(true)) {
    spdlog::critical("the {} backend cannot serve any more ({}): health is NOT_SERVING and new calls are refused",
                     BackendKindName(backend_.kind()), std::string(health.message()));
    if (backend_failed_) backend_failed_(health);
  }
  return health;
}

absl::Status ServiceCore::Complete(CallState& call, const absl::Status& status) {
  const double seconds = call.SecondsSinceArrival();
  const std::string code = StatusCodeName(status);
  const Algorithm ran = status.ok() ? call.report.algorithm : call.requested;
  const RequestRecord record{.method = call.method,
                             .algorithm = AlgorithmName(ran),
                             .dtype = call.dtype_label,
                             .code = code,
                             .seconds = seconds,
                             .keys = status.ok() ? call.keys : 0,
                             .stages = status.ok() ? &call.report.stages : nullptr};
  // A part of a parted Sort is one call of several that make one request: its job records them once.
  if (call.joint_record != nullptr) {
    call.joint_record->Add(record, call.arrival);
  } else {
    metrics_.Record(record);
    if (status.ok() && !call.report.device.empty()) metrics_.RecordDevices(call.report.device);
  }
  uint64_t held_back = 0;
  if (status.ok() || failure_log_.Allow(code, &held_back)) {
    // The message may quote what the caller sent; CallerText keeps it to one printable line.
    spdlog::log(LogLevelFor(status.code()), "[{}] {} dtype={} n={} algorithm={} {} in {:.3f} ms{}{}{}",
                call.request_id, call.method, call.dtype_label, call.keys, AlgorithmName(ran), code,
                seconds * 1e3, status.ok() ? "" : ": ", CallerText(std::string_view(status.message().data(), status.message().size()), kStatusMessageMaxBytes),
                held_back == 0 ? "" : " (" + std::to_string(held_back) + " more " + code +
                                          " lines were held back by the log's rate limit)");
  }
  scheduler_.Release(call);
  if (status.ok()) return status;
  // A failure may be the one that broke the backend: health turns NOT_SERVING before this answer goes
  // out, so that a caller who sees it and asks the health service sees the replica gone too.
  (void)BackendHealth();
  return WithRequestId(call, status);
}

absl::Status ServiceCore::CheckSortAlgorithm(Algorithm a) const {
  if (a == Algorithm::kAuto) return absl::OkStatus();  // every backend has it; no list built per request
  const auto list = backend_.sort_algorithms();
  if (Has(list, a)) return absl::OkStatus();
  return AlgorithmUnavailable("Sort", a, list, BackendKindName(backend_.kind()));
}

absl::Status ServiceCore::CheckTopKAlgorithm(Algorithm a) const {
  if (a == Algorithm::kAuto) return absl::OkStatus();
  const auto list = backend_.topk_algorithms();
  if (Has(list, a)) return absl::OkStatus();
  return AlgorithmUnavailable("TopK", a, list, BackendKindName(backend_.kind()));
}

void ServiceCore::FillInfo(const CallState& call, v1::ExecutionInfo* info) const {
  info->set_algorithm(gpusort::ToProto(call.report.algorithm));
  info->set_backend(ToProto(call.report.backend.value_or(backend_.kind())));
  info->set_device(call.report.device.empty() ? backend_.device() : call.report.device);
  for (const StageTime& s : call.report.stages) {
    auto* stage = info->add_stages();
    stage->set_stage(std::string(StageName(s.stage)));
    stage->set_seconds(s.seconds);
  }
  info->set_server_seconds(call.SecondsSinceArrival());
  info->set_request_id(call.request_id);
}

}  // namespace gpusort
