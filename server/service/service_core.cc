#include "server/service/service_core.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "server/service/grpc_status.h"
#include "server/service/request_decode.h"

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

}  // namespace

ServiceCore::ServiceCore(const ServerConfig& config, Backend& backend, Metrics& metrics)
    : config_(config),
      backend_(backend),
      metrics_(metrics),
      admission_(config.max_inflight),
      regions_(backend, {.max_regions = config.shm_max_regions, .max_total_bytes = config.shm_max_bytes}),
      parted_sorts_(static_cast<std::size_t>(std::max(1, config.max_inflight))),
      pool_(config.workers, [&metrics](std::size_t depth) {
        metrics.queue_depth().Set(static_cast<double>(depth));
      }),
      batcher_(std::make_unique<SortBatcher>(
          backend, metrics, [this](std::function<void()> job) { pool_.Submit(std::move(job)); },
          SortBatcherOptions{.delay_us = config.batch_delay_us,
                             .max_requests = config.batch_max_requests,
                             .max_keys = config.batch_max_keys})) {}

ServiceCore::~ServiceCore() { batcher_.reset(); }

absl::Status ServiceCore::Admit(CallState& call) {
  if (draining()) {
    last_drain_refusal_.store(std::chrono::steady_clock::now().time_since_epoch().count());
    return absl::UnavailableError("the server is shutting down; retry on another replica");
  }
  if (!admission_.TryAcquire())
    return absl::ResourceExhaustedError("too many requests in flight (limit " +
                                        std::to_string(config_.max_inflight) + "); retry later");
  call.admitted = true;
  metrics_.inflight().Increment();
  return absl::OkStatus();
}

void ServiceCore::Complete(CallState& call, const absl::Status& status) {
  const double seconds = call.SecondsSinceArrival();
  const std::string code = StatusCodeName(status);
  const Algorithm ran = status.ok() ? call.report.algorithm : call.requested;
  metrics_.Record({.method = call.method,
                   .algorithm = AlgorithmName(ran),
                   .dtype = call.dtype_label,
                   .code = code,
                   .seconds = seconds,
                   .keys = status.ok() ? call.keys : 0,
                   .stages = status.ok() ? &call.report.stages : nullptr});
  spdlog::log(LogLevelFor(status.code()), "[{}] {} dtype={} n={} algorithm={} {} in {:.3f} ms{}{}",
              call.request_id, call.method, call.dtype_label, call.keys, AlgorithmName(ran), code,
              seconds * 1e3, status.ok() ? "" : ": ", std::string(status.message()));
  for (const Backend::MemoryReading& m : backend_.memory()) {
    metrics_.SetDeviceMemory(m.device, m.kind, m.bytes);
  }
  if (call.admitted) {
    call.admitted = false;
    metrics_.inflight().Decrement();
    admission_.Release();
  }
}

absl::Status ServiceCore::CheckSortAlgorithm(Algorithm a) const {
  const auto list = backend_.sort_algorithms();
  if (Has(list, a)) return absl::OkStatus();
  return AlgorithmUnavailable("Sort", a, list, BackendKindName(backend_.kind()));
}

absl::Status ServiceCore::CheckTopKAlgorithm(Algorithm a) const {
  const auto list = backend_.topk_algorithms();
  if (Has(list, a)) return absl::OkStatus();
  return AlgorithmUnavailable("TopK", a, list, BackendKindName(backend_.kind()));
}

void ServiceCore::Submit(CallState& call, std::function<void()> work) {
  pool_.Submit([&call, queued = StageClock(), work = std::move(work)] {
    call.report.AddStage("queue", queued.Seconds());
    work();
  });
}

void ServiceCore::FillInfo(const CallState& call, v1::ExecutionInfo* info) const {
  info->set_algorithm(gpusort::ToProto(call.report.algorithm));
  info->set_backend(ToProto(call.report.backend.value_or(backend_.kind())));
  info->set_device(call.report.device.empty() ? backend_.device() : call.report.device);
  for (const StageTime& s : call.report.stages) {
    auto* stage = info->add_stages();
    stage->set_stage(s.stage);
    stage->set_seconds(s.seconds);
  }
  info->set_server_seconds(call.SecondsSinceArrival());
  info->set_request_id(call.request_id);
}

}  // namespace gpusort
