#include "server/transport/sort_parts.h"

#include <algorithm>
#include <string>
#include <utility>

#include "server/core/status_macros.h"
#include "server/transport/request_decode.h"

namespace gpusort {
namespace {

constexpr uint32_t kMaxParts = 64;
constexpr std::size_t kMinJobIdBytes = 16, kMaxJobIdBytes = 64;

bool SameSpec(const SortSpec& a, const SortSpec& b) {
  return a.dtype == b.dtype && a.order == b.order && a.stable == b.stable && a.payload == b.payload &&
         a.algorithm == b.algorithm && a.rows == b.rows &&
         (a.segment_offsets == b.segment_offsets ||
          (a.segment_offsets && b.segment_offsets && *a.segment_offsets == *b.segment_offsets));
}

absl::Status CheckPart(const SortSpec& spec, const PartRef& part, std::size_t max_request_bytes) {
  if (part.job.size() < kMinJobIdBytes || part.job.size() > kMaxJobIdBytes) {
    return absl::InvalidArgumentError("part.job must be 16 to 64 random bytes; got " +
                                      std::to_string(part.job.size()));
  }
  if (part.count < 2 || part.count > kMaxParts) {
    return absl::InvalidArgumentError("part.count must be 2 to 64; got " + std::to_string(part.count));
  }
  if (part.index >= part.count) {
    return absl::InvalidArgumentError("part.index " + std::to_string(part.index) + " is not below part.count " +
                                      std::to_string(part.count));
  }
  return CheckSortInParts(spec, part.total_keys, "the parts' " + std::to_string(part.total_keys) + " keys",
                          "a Sort sent in parts", max_request_bytes);
}

}  // namespace

PartedSort::PartedSort(const SortSpec& spec, const PartRef& first, std::unique_ptr<PartedSortIngest> ingest,
                       std::function<void(const RequestRecord&)> record)
    : SortInParts(spec, first.total_keys, first.count, std::move(ingest)),
      joint_record_(std::make_shared<JointRecord>(first.count, std::move(record))),
      joined_(first.count, false) {}

bool PartedSort::AllArrived() {
  std::lock_guard lock(mutex_);
  return arrived_ == parts();
}

absl::Status PartedSort::Join(const SortSpec& spec, const PartRef& part) {
  std::lock_guard lock(mutex_);
  if (!failed_.ok()) return failure_for_others_;
  if (!SameSpec(spec, this->spec()) || part.count != parts() || part.total_keys != total_keys()) {
    return absl::InvalidArgumentError("part " + std::to_string(part.index) +
                                      " disagrees with the job's earlier parts (options, part.count or "
                                      "part.total_keys differ)");
  }
  if (joined_[part.index]) {
    return absl::InvalidArgumentError("part " + std::to_string(part.index) + " of this job came twice");
  }
  joined_[part.index] = true;
  return absl::OkStatus();
}

void PartedSort::Arrive(std::function<void()> resume) {
  std::vector<std::function<void()>> go;
  {
    std::lock_guard lock(mutex_);
    if (!failed_.ok()) {
      go.push_back(std::move(resume));
    } else {
      waiting_.push_back(std::move(resume));
      if (++arrived_ == parts()) go.swap(waiting_);
    }
  }
  for (auto& f : go) f();
}

void PartedSort::Fail(uint32_t index, const absl::Status& status) {
  std::vector<std::function<void()>> go;
  absl::Status for_others;
  uint32_t parts_to_come = 0;
  {
    std::lock_guard lock(mutex_);
    if (arrived_ == parts() || !failed_.ok()) return;
    failed_ = status.ok() ? absl::UnknownError("part failed") : status;
    failure_for_others_ = absl::AbortedError("part " + std::to_string(index) + " of this sort failed: " +
                                             std::string(failed_.message()));
    for_others = failure_for_others_;
    parts_to_come = static_cast<uint32_t>(std::count(joined_.begin(), joined_.end(), false));
    go.swap(waiting_);
  }
  if (on_failed_ && parts_to_come > 0) on_failed_(for_others, parts_to_come);
  for (auto& f : go) f();
}

void PartedSort::AfterSort(std::function<void(bool runs_sort)> step) {
  bool now = true, runs_sort = false;
  {
    std::lock_guard lock(mutex_);
    if (failed_.ok() && !settled_) {
      if (sort_taken_) {
        after_sort_.push_back([step] { step(false); });
        now = false;
      } else {
        sort_taken_ = runs_sort = true;
      }
    }
  }
  if (now) step(runs_sort);
}

void PartedSort::Settled() {
  std::vector<std::function<void()>> go;
  {
    std::lock_guard lock(mutex_);
    settled_ = true;
    go.swap(after_sort_);
  }
  for (auto& f : go) f();
}

absl::Status PartedSort::SortOnce(const Cancellation& cancellation, ExecutionReport& report) {
  {
    std::lock_guard lock(mutex_);
    if (!failed_.ok()) return failure_for_others_;
  }
  const absl::Status status =
      RunSortOnce([&](ExecutionReport& sorted) { return ingest().Sort(cancellation, sorted); });
  report.algorithm = sort_report().algorithm;
  report.backend = sort_report().backend;
  report.device = sort_report().device;
  for (const StageTime& stage : sort_report().stages) report.stages.push_back(stage);
  return status;
}

absl::StatusOr<std::shared_ptr<PartedSort>> PartedSorts::Join(const std::string& caller_host, const SortSpec& spec,
                                                             const PartRef& part, Backend& backend,
                                                             std::size_t max_request_bytes,
                                                             const TakeJobTicket& take_ticket) {
  RETURN_IF_ERROR(CheckPart(spec, part, max_request_bytes));
  // The whole Sort's count against the backend's limits, before any part starts a job or allocates.
  RETURN_IF_ERROR(backend.CheckSortLimits(spec, part.total_keys));
  const std::string key = caller_host + '\n' + part.job;
  std::shared_ptr<PartedSort> job;
  absl::Status joined;
  {
    std::lock_guard lock(mutex_);
    Sweep();
    RETURN_IF_ERROR(TakeFailed(key));
    if (auto found = jobs_.find(key); found != jobs_.end()) job = found->second.lock();
    // A job whose parts all arrived takes no more; its id may start a new Sort while the old one answers.
    if (job == nullptr || job->AllArrived()) return StartJob(key, spec, part, backend, take_ticket);
    joined = job->Join(spec, part);
  }
  // A part that does not fit its job means the caller's parts are broken: fail them all now rather
  // than leave the good ones waiting for a part that will not come. (Not under mutex_: failing the job
  // records it here.)
  if (!joined.ok()) job->Fail(part.index, joined);
  RETURN_IF_ERROR(joined);
  job->Moved();
  return job;
}

absl::StatusOr<std::shared_ptr<PartedSort>> PartedSorts::StartJob(const std::string& key, const SortSpec& spec,
                                                                 const PartRef& part, Backend& backend,
                                                                 const TakeJobTicket& take_ticket) {
  if (jobs_.size() >= max_jobs_) {
    return absl::ResourceExhaustedError("the server already holds " + std::to_string(max_jobs_) +
                                        " sorts arriving in parts; retry later");
  }
  JobTicket ticket;
  if (take_ticket) {
    ASSIGN_OR_RETURN(ticket, take_ticket());
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PartedSortIngest> ingest, backend.StartPartedSortIngest(spec, part.total_keys));
  auto job = std::make_shared<PartedSort>(spec, part, std::move(ingest), record_);
  job->ticket_ = std::move(ticket);
  job->on_failed_ = [this, key](const absl::Status& for_others, uint32_t parts_to_come) {
    std::lock_guard lock(mutex_);
    RememberFailed(key, for_others, parts_to_come);
  };
  RETURN_IF_ERROR(job->Join(spec, part));
  job->Moved();
  jobs_[key] = job;
  return job;
}

void PartedSorts::Abandon(const std::string& caller_host, const PartRef& part, const absl::Status& status) {
  if (part.job.size() < kMinJobIdBytes || part.job.size() > kMaxJobIdBytes || part.count < 2 ||
      part.count > kMaxParts || part.index >= part.count) {
    return;  // not a part any job could have: nothing to fail
  }
  const std::string key = caller_host + '\n' + part.job;
  std::shared_ptr<PartedSort> job;
  {
    std::lock_guard lock(mutex_);
    Sweep();
    if (auto found = jobs_.find(key); found != jobs_.end()) job = found->second.lock();
    if (job == nullptr) {
      // No part has come yet: the others are told when they do.
      if (!failed_.contains(key)) {
        RememberFailed(key,
                       absl::AbortedError("part " + std::to_string(part.index) + " of this sort failed: " +
                                          std::string(status.message())),
                       part.count - 1);
      }
      return;
    }
  }
  job->Fail(part.index, status);
}

void PartedSorts::RememberFailed(const std::string& key, const absl::Status& for_others, uint32_t parts_to_come) {
  if (failed_.size() >= 4 * max_jobs_) {  // full: forget the one to be forgotten soonest
    auto oldest = std::min_element(failed_.begin(), failed_.end(), [](const auto& a, const auto& b) {
      return a.second.forget_at < b.second.forget_at;
    });
    failed_.erase(oldest);
  }
  failed_[key] = FailedJob{.status = for_others,
                           .parts_to_come = parts_to_come,
                           .forget_at = std::chrono::steady_clock::now() + kFailedJobMemory};
}

absl::Status PartedSorts::TakeFailed(const std::string& key) {
  auto it = failed_.find(key);
  if (it == failed_.end()) return absl::OkStatus();
  absl::Status status = it->second.status;
  if (--it->second.parts_to_come == 0) failed_.erase(it);
  return status;
}

void PartedSorts::Sweep() {
  for (auto it = jobs_.begin(); it != jobs_.end();) it = it->second.expired() ? jobs_.erase(it) : std::next(it);
  const auto now = std::chrono::steady_clock::now();
  for (auto it = failed_.begin(); it != failed_.end();) it = it->second.forget_at <= now ? failed_.erase(it) : std::next(it);
}

}  // namespace gpusort
