// Between the reactors and the engines: the one place that decides when and where a request's work
// runs. It holds the tickets (admission) and the worker pool and its queue, and places each validated
// request by one policy:
//   inline:  on the gRPC thread that took it, as the echo is answered: AUTO or CPU work of at most
//            --inline-max-keys keys on a backend whose small calls are cheap, never on shared memory
//            (tens of microseconds, cheaper than the hop to a worker);
//   worker:  everything else, queued for a worker thread;
//   the caller's thread: a call whose transport gave it a thread of its own (on_callers_thread).
// (Dynamic batching, small Sorts waiting for others of their kind to share a launch, was measured
// slower than answering each inline, 0.47-0.71x echo's requests/s against 0.81-1.03x, and is gone:
// docs/benchmarks-log.md, "Dynamic batching".)
// Transports reach it through ServiceCore (Submit, OpenCall) and hold no policy of their own. Deadlines: every
// queued request keeps its Cancellation, which the engine checks when the work starts and between its
// stages, so one whose deadline passed in the queue ends DEADLINE_EXCEEDED before any work.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "server/backend/backend.h"
#include "server/service/admission.h"
#include "server/service/call_state.h"
#include "server/service/config.h"
#include "server/service/metrics.h"
#include "server/service/worker_pool.h"

namespace gpusort {

class Scheduler {
 public:
  Scheduler(const ServerConfig& config, Backend& backend, Metrics& metrics);
  ~Scheduler();  // Stop()

  // A ticket for the call: RESOURCE_EXHAUSTED when max_inflight calls, or the caller's share of them,
  // are already in flight. A stream takes its ticket when its first message arrives, and gives back
  // its waiting ticket then.
  absl::Status Admit(CallState& call);
  // A stream's ticket while it waits for its first message: as many again as --max-inflight, with the
  // same per-caller share, so that streams that never send cannot hold the tickets that do work.
  absl::Status AdmitWaitingStream(CallState& call);
  // A ticket of --max-inflight for `caller` held by what the call starts rather than by the call: a Sort
  // in parts (sort_parts.h) holds one for all its parts. Given back when the last copy goes.
  absl::StatusOr<std::shared_ptr<void>> AdmitJob(const std::string& caller);
  // Gives back whatever tickets the call holds.
  void Release(CallState& call);
  // Until no call holds a ticket, or `timeout` (the drain).
  bool WaitIdle(std::chrono::duration<double> timeout) { return admission_.WaitIdle(timeout); }

  // A validated unary request: what the policy needs to know about it, and how to run it.
  struct Request {
    std::size_t keys = 0;
    Algorithm algorithm = Algorithm::kAuto;  // as asked
    bool on_shared_memory = false;
    // The transport's own thread is the call's (a connection of the shared-memory socket, whose caller
    // waits on it): run there, with no hop to a worker.
    bool on_callers_thread = false;
    std::function<void()> run;               // runs it and replies
  };
  // Runs the request where the policy places it; stamps its "queue" stage (0 when inline).
  void Enqueue(CallState& call, Request request);
  // A step of a streaming call, on a worker, stamped "queue" (or not, with stamp_queue false).
  void EnqueueStep(CallState& call, std::function<void()> work, bool stamp_queue = true);
  // Work of no one call (a SortOnSockets job's sort, which outlives its call's reactor), on a worker.
  void EnqueueWork(std::function<void()> work);
  // Runs what is queued and joins the workers. Idempotent.
  void Stop();

  enum class Placement { kInline, kWorker };
  Placement Place(const Request& request) const;

 private:
  absl::Status Refusal(AdmissionRefusal why, const Admission& pool, std::string_view what) const;

  const ServerConfig& config_;
  Backend& backend_;
  Metrics& metrics_;
  Admission admission_;
  Admission waiting_streams_;
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace gpusort
