// Sorts whose keys travel on several SortStream calls at once (proto StreamPart): one stream moves
// about 0.5-1 GB/s, several connections several times that. The parts of one Sort find each other
// here by the caller's job id, write their ranges of one PartedSortIngest side by side, wait for each
// other, and each sends back its own range of the sorted array.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/backend/backend.h"
#include "server/transport/grpc/joint_record.h"
#include "server/transport/sort_in_parts.h"

namespace gpusort {

// A Sort in parts holds one ticket of --max-inflight however many parts it has (issue 41: a ticket a
// part made a 64-part Sort, which the proto allows, fail for every caller whose share is 48): the part
// that starts the job takes it, and it is given back when the job's last part lets go of the job.
using JobTicket = std::shared_ptr<void>;
using TakeJobTicket = std::function<absl::StatusOr<JobTicket>()>;

// What a part's first message says about the job (proto StreamPart).
struct PartRef {
  std::string job;
  uint32_t index = 0;
  uint32_t count = 0;
  uint64_t total_keys = 0;
};

class PartedSort : public SortInParts {
 public:
  // `record` receives the job's one RequestRecord (JointRecord), once its parts have ended.
  PartedSort(const SortSpec& spec, const PartRef& first, std::unique_ptr<PartedSortIngest> ingest,
             std::function<void(const RequestRecord&)> record);

  // Where each part that joined adds its end instead of recording it: the job counts as one request.
  const std::shared_ptr<JointRecord>& joint_record() const { return joint_record_; }

  // A part waiting for its siblings gives up once none of them has moved (Moved) for
  // --stream-idle-timeout.
  // Part `index` has written all its keys. `resume` runs once every part has (on the thread of the
  // last one to arrive), or once the job fails, or at once if it already has.
  void Arrive(std::function<void()> resume);
  // Part `index` failed with `status` before the sort: every part resumes and fails (ABORTED, naming
  // the part, for the others). Nothing once every part has arrived: the sort no longer needs it.
  void Fail(uint32_t index, const absl::Status& status);
  // Once every part has arrived, the first part's `step` runs now (`runs_sort` true: its step sorts);
  // the others' steps are kept off the workers until that step is done with the sort (Settled), then
  // run (`runs_sort` false: their SortOnce finds the answer). Each step puts a worker's work in the
  // queue, so a Sort in parts holds one worker while it sorts, not one per part that would each wait
  // on the sort (with fewer workers than parts, other calls queued behind them for the whole sort).
  // After a failure every step runs at once.
  void AfterSort(std::function<void(bool runs_sort)> step);
  // The step that runs the sort is done with it (or ended without it: cancelled before it began):
  // the kept steps run. Idempotent.
  void Settled();
  // The first caller sorts, with its own cancellation; any other waits for it. Each adds the sort's
  // report (algorithm, device, stages) to its own. A failed job answers with its failure.
  absl::Status SortOnce(const Cancellation& cancellation, ExecutionReport& report);

 private:
  friend class PartedSorts;
  bool AllArrived();
  // Registers part `index` of `part`'s job; INVALID_ARGUMENT when it does not fit the job.
  absl::Status Join(const SortSpec& spec, const PartRef& part);

  std::shared_ptr<JointRecord> joint_record_;
  JobTicket ticket_;  // given back when the job goes
  // Called once, with the failure, when the job fails before the sort (PartedSorts remembers it).
  std::function<void(const absl::Status& for_others, uint32_t parts_to_come)> on_failed_;
  std::mutex mutex_;
  std::vector<bool> joined_;
  uint32_t arrived_ = 0;
  std::vector<std::function<void()>> waiting_;
  bool sort_taken_ = false;  // a step that runs the sort was let go (AfterSort)
  bool settled_ = false;     // that step is done with the sort (Settled)
  std::vector<std::function<void()>> after_sort_;
  absl::Status failed_;  // the first part failure before the sort
  absl::Status failure_for_others_;
};

// The jobs whose parts are still running, by caller host and job id; and the jobs that failed, for a
// while, so that a part arriving after its job failed (and every part holding the job had ended) is
// told so (ABORTED) instead of starting the job again and waiting for parts that will not come.
class PartedSorts {
 public:
  // How long a failed job is remembered, at most.
  static constexpr std::chrono::seconds kFailedJobMemory{120};

  // `record` receives each job's one RequestRecord (JointRecord); by default nothing does.
  explicit PartedSorts(std::size_t max_jobs, std::function<void(const RequestRecord&)> record = {})
      : max_jobs_(max_jobs), record_(std::move(record)) {}

  // The job `part` belongs to, started by whichever of its parts comes first, which takes the job's
  // ticket with `take_ticket` (its refusal refuses the part). `caller_host` scopes job ids, so that
  // callers on other hosts cannot join a job even if they learn its id.
  absl::StatusOr<std::shared_ptr<PartedSort>> Join(const std::string& caller_host, const SortSpec& spec,
                                                   const PartRef& part, Backend& backend,
                                                   std::size_t max_request_bytes, const TakeJobTicket& take_ticket);

  // Part `part` failed before it could join its job (its first message was refused): the job fails, or
  // is remembered as failed if none of its parts has come yet.
  void Abandon(const std::string& caller_host, const PartRef& part, const absl::Status& status);

 private:
  struct FailedJob {
    absl::Status status;  // what the parts still to come are answered (ABORTED)
    uint32_t parts_to_come = 0;
    std::chrono::steady_clock::time_point forget_at;
  };
  // With mutex_ held.
  absl::StatusOr<std::shared_ptr<PartedSort>> StartJob(const std::string& key, const SortSpec& spec,
                                                       const PartRef& part, Backend& backend,
                                                       const TakeJobTicket& take_ticket);
  void RememberFailed(const std::string& key, const absl::Status& for_others, uint32_t parts_to_come);
  absl::Status TakeFailed(const std::string& key);
  void Sweep();

  const std::size_t max_jobs_;
  const std::function<void(const RequestRecord&)> record_;
  std::mutex mutex_;
  // weak: a job lives as long as its parts' calls hold it; expired entries are swept on the next Join.
  std::map<std::string, std::weak_ptr<PartedSort>> jobs_;
  std::map<std::string, FailedJob> failed_;  // at most 4 * max_jobs_, each for kFailedJobMemory at most
};

}  // namespace gpusort
