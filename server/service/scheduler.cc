#include "server/service/scheduler.h"

#include <utility>

#include "server/service/config.h"

namespace gpusort {

Scheduler::Scheduler(const ServerConfig& config, Backend& backend, Metrics& metrics)
    : config_(config),
      backend_(backend),
      metrics_(metrics),
      admission_(config.max_inflight, PerCallerInflightLimit(config)),
      waiting_streams_(config.max_inflight, PerCallerInflightLimit(config)),
      pool_(std::make_unique<WorkerPool>(config.workers,
                                         [&metrics](std::size_t depth) {
                                           metrics.queue_depth().Set(static_cast<double>(depth));
                                         })) {
  // Load-aware AUTO counts what this server has admitted, not only what sits inside an engine: a call
  // spends much of its time decoding, queueing and answering, and the load steps were measured against
  // the callers' calls in flight (auto_policy.h).
  backend.WatchCallsInFlight(admission_.in_flight_now());
}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Stop() {
  pool_.reset();  // runs what is queued, then joins
}

absl::Status Scheduler::Refusal(AdmissionRefusal why, const Admission& pool, std::string_view what) const {
  if (why == AdmissionRefusal::kTotal) {
    return absl::ResourceExhaustedError("too many " + std::string(what) + " (limit " + std::to_string(pool.limit()) +
                                        "); retry later");
  }
  return absl::ResourceExhaustedError("this caller has its share of " + std::string(what) + " already (" +
                                      std::to_string(pool.per_caller_limit()) +
                                      ", --max-inflight-per-caller); retry later");
}

absl::Status Scheduler::Admit(CallState& call) {
  if (call.waiting_stream) {
    call.waiting_stream = false;
    waiting_streams_.Release(call.caller);
  }
  const AdmissionRefusal refused = admission_.TryAcquire(call.caller);
  if (refused != AdmissionRefusal::kNone) return Refusal(refused, admission_, "requests in flight");
  call.admitted = true;
  metrics_.inflight().Increment();
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<void>> Scheduler::AdmitJob(const std::string& caller) {
  const AdmissionRefusal refused = admission_.TryAcquire(caller);
  if (refused != AdmissionRefusal::kNone) return Refusal(refused, admission_, "requests in flight");
  metrics_.inflight().Increment();
  // The job may end on any thread; the scheduler outlives every job (calls end before it stops).
  return std::shared_ptr<void>(nullptr, [this, caller](void*) {
    metrics_.inflight().Decrement();
    admission_.Release(caller);
  });
}

absl::Status Scheduler::AdmitWaitingStream(CallState& call) {
  const AdmissionRefusal refused = waiting_streams_.TryAcquire(call.caller);
  if (refused != AdmissionRefusal::kNone) {
    return Refusal(refused, waiting_streams_, "streams waiting for their first message");
  }
  call.waiting_stream = true;
  return absl::OkStatus();
}

void Scheduler::Release(CallState& call) {
  if (call.admitted) {
    call.admitted = false;
    metrics_.inflight().Decrement();
    admission_.Release(call.caller);
  }
  if (call.waiting_stream) {
    call.waiting_stream = false;
    waiting_streams_.Release(call.caller);
  }
}

Scheduler::Placement Scheduler::Place(const Request& request) const {
  if (request.on_callers_thread) return Placement::kInline;
  if (request.on_shared_memory) return Placement::kWorker;
  const bool small = request.keys <= config_.inline_max_keys &&
                     (request.algorithm == Algorithm::kAuto || request.algorithm == Algorithm::kCpu) &&
                     backend_.SmallCallsAreCheap();
  return small ? Placement::kInline : Placement::kWorker;
}

void Scheduler::Enqueue(CallState& call, Request request) {
  switch (Place(request)) {
    case Placement::kInline:
      call.report.AddStage(Stage::kQueue, 0);  // no wait for a worker: the stage list stays the same
      request.run();
      return;
    case Placement::kWorker: return EnqueueStep(call, std::move(request.run));
  }
}

void Scheduler::EnqueueWork(std::function<void()> work) { pool_->Submit(std::move(work)); }

void Scheduler::EnqueueStep(CallState& call, std::function<void()> work, bool stamp_queue) {
  if (!stamp_queue) return pool_->Submit(std::move(work));
  pool_->Submit([&call, queued = StageClock(), work = std::move(work)] {
    call.report.AddStage(Stage::kQueue, queued.Seconds());
    work();
  });
}

}  // namespace gpusort
