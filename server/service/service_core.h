// State shared by every call of the service: the backend, admission, the worker pool, metrics and
// the drain flag; and the one entry every transport hands its calls to (Submit, or an OpenCall for a
// call that lives across events). It knows nothing of reactors or sockets.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "gpusort/v1/sort.pb.h"
#include "server/backend/backend.h"
#include "server/service/call_state.h"
#include "server/service/config.h"
#include "server/service/log_limiter.h"
#include "server/service/metrics.h"
#include "server/service/scheduler.h"
#include "server/service/shared_regions.h"
#include "server/transport/data_port/socket_sorts.h"
#include "server/transport/sort_parts.h"
#include "server/transport/grpc/stream_watchdog.h"

namespace gpusort {

class ServiceCore {
 public:
  // `backend_failed` is called once, with the backend's Healthy() status, when the backend first reports
  // that it cannot serve any more (the server turns health NOT_SERVING).
  using BackendFailedFn = std::function<void(const absl::Status&)>;
  // `devices_changed` is called when one of the backend's GPUs stops serving while others serve on
  // (Backend::devices_lost): the server then says which in health.
  using DevicesChangedFn = std::function<void()>;
  ServiceCore(const ServerConfig& config, Backend& backend, Metrics& metrics, BackendFailedFn backend_failed = {},
              DevicesChangedFn devices_changed = {});

  const ServerConfig& config() const { return config_; }
  Backend& backend() { return backend_; }
  SharedRegions& regions() { return regions_; }
  PartedSorts& parted_sorts() { return parted_sorts_; }
  SocketSorts& socket_sorts() { return socket_sorts_; }

  // The one entry for a call of one request and one answer (a unary gRPC call, a call on the
  // shared-memory socket). The order is the service's, not the transport's: a refusal the transport made
  // before any ticket (a token) is counted and answered; else the call's ticket (Admit), `prepare` (a
  // failure is answered at once), `run` where the scheduler places it, then Complete, once, and `reply`
  // with what Complete returns. `reply` is the call's last act: the call may be gone after it.
  struct WholeCall {
    absl::Status refused = absl::OkStatus();
    // The call holds its ticket (gRPC: its answer will carry x-request-id). May be empty.
    std::function<void()> admitted;
    // Decodes and validates the request; says what the scheduler needs to place it (`run` unset).
    std::function<absl::StatusOr<Scheduler::Request>()> prepare;
    std::function<absl::Status()> run;  // the work, and the reply's message filled
    std::function<void(const absl::Status& answer)> reply;
  };
  // `context`: the gRPC call's, which names the caller; null for a call whose call.caller is set.
  void Submit(CallState& call, const grpc::CallbackServerContext* context, WholeCall whole);
  // A call refused before it asked for a ticket (no or a wrong token): counted and logged like any other
  // finished call, so that the request-rate panels and the error-rate alert see it. Returns what to answer.
  absl::Status Refuse(CallState& call, const absl::Status& why) { return Complete(call, why); }

  // The scheduler: where work runs (the workers' queue). Tickets and completion are not taken through
  // it by transports: Submit above, or an OpenCall (open_call.h) for calls that hold theirs across events.
  Scheduler& scheduler() { return scheduler_; }

  // UNIMPLEMENTED (with the list) when the backend lacks the asked algorithm.
  absl::Status CheckSortAlgorithm(Algorithm a) const;
  absl::Status CheckTopKAlgorithm(Algorithm a) const;
  // INVALID_ARGUMENT when a request of `count` keys is over a limit the backend publishes (the CUDA
  // backend's 2^31-1 keys, ODD_EVEN's size, a selection kernel's k): checked while validating, so that
  // such a request never queues, waits for a stream slot or reaches the backend.
  absl::Status CheckSortLimits(const SortSpec& spec, std::size_t count) const {
    return backend_.CheckSortLimits(spec, count);
  }
  absl::Status CheckTopKLimits(const TopKSpec& spec, std::size_t count) const {
    return backend_.CheckTopKLimits(spec, count);
  }

  // Fills the reply's ExecutionInfo from the call's report.
  void FillInfo(const CallState& call, v1::ExecutionInfo* info) const;

  void StartDraining() { draining_.store(true); }
  bool draining() const { return draining_.load(); }
  // When Admit last refused a call for the drain (the epoch when it never did).
  std::chrono::steady_clock::time_point last_drain_refusal() const {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(last_drain_refusal_.load()));
  }
  bool WaitIdle(std::chrono::duration<double> timeout) { return scheduler_.WaitIdle(timeout); }

  StreamWatchdog& watchdog() { return watchdog_; }

 private:
  friend class OpenCall;  // the tickets of calls that live across events (open_call.h)

  // Takes an in-flight ticket for the call: UNAVAILABLE while draining or once the backend has failed
  // for good (Backend::Healthy), RESOURCE_EXHAUSTED when max_inflight calls, or the caller's share of
  // them, are already in flight. `context` null: call.caller is already set (a call without gRPC).
  absl::Status Admit(CallState& call, const grpc::CallbackServerContext* context);
  // A stream's ticket while it waits for its first message: as many again as --max-inflight, with the
  // same per-caller share, so that streams that never send cannot hold the tickets that do work.
  absl::Status AdmitWaitingStream(CallState& call, const grpc::CallbackServerContext& context);
  // A stream whose work joins a job that holds the ticket (a part of a Sort in parts): Admit's checks,
  // and its waiting stream's ticket given back; the job takes its own (Scheduler::AdmitJob).
  absl::Status AdmitIntoJob(CallState& call, const grpc::CallbackServerContext& context);
  // Counts and logs the finished call (failed ones through a rate limit), returns its tickets, and
  // returns the status to answer with: `status`, except that the server's own failures (INTERNAL,
  // UNKNOWN, DATA_LOSS) name the request id, which is what the caller can hand to whoever reads this
  // server's log. When the call failed because the backend has failed for good, health is NOT_SERVING
  // before the answer goes out. Once per call, right before its answer.
  absl::Status Complete(CallState& call, const absl::Status& status);

  const ServerConfig& config_;
  Backend& backend_;
  Metrics& metrics_;
  std::string CallerOf(CallState& call, const grpc::CallbackServerContext& context) const;
  // What every ticket needs first: UNAVAILABLE while draining or once the backend has failed for good;
  // names the caller (from `context` when there is one).
  absl::Status Open(CallState& call, const grpc::CallbackServerContext* context);
  // The backend's Healthy(); the first failure is logged and handed to backend_failed_, once. A GPU lost
  // while others serve is logged and handed to devices_changed_.
  absl::Status BackendHealth();

  LogLimiter failure_log_;
  std::atomic<bool> draining_{false};
  BackendFailedFn backend_failed_;
  std::atomic<bool> backend_failed_seen_{false};
  DevicesChangedFn devices_changed_;
  std::atomic<int> devices_lost_seen_{0};
  std::atomic<std::chrono::steady_clock::rep> last_drain_refusal_{0};
  SharedRegions regions_;
  SocketSorts socket_sorts_;  // SortOnSockets calls in progress, by ticket
  PartedSorts parted_sorts_;  // every part is an admitted call, so max_inflight bounds the jobs too
  Scheduler scheduler_;       // its workers stop before the rest goes away
  // After the scheduler: its thread, which may hand a stalled part's work to the workers, stops before
  // them (members go in reverse order).
  StreamWatchdog watchdog_;
};

}  // namespace gpusort
