#include "server/service/sort_parts.h"

#include <string>
#include <utility>

#include "server/core/status_macros.h"

namespace gpusort {
namespace {

constexpr uint32_t kMaxParts = 64;
constexpr std::size_t kMinJobIdBytes = 16, kMaxJobIdBytes = 64;

bool SameSpec(const SortSpec& a, const SortSpec& b) {
  return a.dtype == b.dtype && a.order == b.order && a.stable == b.stable && a.payload == b.payload &&
         a.algorithm == b.algorithm;
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
  if (spec.payload == SortPayload::kValues) {
    return absl::InvalidArgumentError(
        "a Sort sent in parts carries keys only (or PAYLOAD_INDICES); send keys with values on one stream");
  }
  const std::size_t width = ElementSize(spec.dtype);
  if (part.total_keys > max_request_bytes / width) {
    return absl::ResourceExhaustedError("the parts' " + std::to_string(part.total_keys) +
                                        " keys exceed the server's request limit of " +
                                        std::to_string(max_request_bytes) + " bytes");
  }
  return absl::OkStatus();
}

}  // namespace

PartedSort::PartedSort(const SortSpec& spec, const PartRef& first, std::unique_ptr<PartedSortIngest> ingest)
    : spec_(spec),
      count_(first.count),
      total_keys_(first.total_keys),
      ingest_(std::move(ingest)),
      joined_(first.count, false) {}

bool PartedSort::AllArrived() {
  std::lock_guard lock(mutex_);
  return arrived_ == count_;
}

absl::Status PartedSort::Join(const SortSpec& spec, const PartRef& part) {
  std::lock_guard lock(mutex_);
  if (!failed_.ok()) return failure_for_others_;
  if (!SameSpec(spec, spec_) || part.count != count_ || part.total_keys != total_keys_) {
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
      if (++arrived_ == count_) go.swap(waiting_);
    }
  }
  for (auto& f : go) f();
}

void PartedSort::Fail(uint32_t index, const absl::Status& status) {
  std::vector<std::function<void()>> go;
  {
    std::lock_guard lock(mutex_);
    if (arrived_ == count_ || !failed_.ok()) return;
    failed_ = status.ok() ? absl::UnknownError("part failed") : status;
    failure_for_others_ = absl::AbortedError("part " + std::to_string(index) + " of this sort failed: " +
                                             std::string(failed_.message()));
    go.swap(waiting_);
  }
  for (auto& f : go) f();
}

absl::Status PartedSort::SortOnce(const Cancellation& cancellation, ExecutionReport& report) {
  {
    std::lock_guard lock(mutex_);
    if (!failed_.ok()) return failure_for_others_;
  }
  std::lock_guard lock(sort_mutex_);
  if (!sorted_) {
    sorted_ = true;
    sort_status_ = ingest_->Sort(cancellation, sort_report_);
  }
  report.algorithm = sort_report_.algorithm;
  report.backend = sort_report_.backend;
  report.device = sort_report_.device;
  for (const StageTime& stage : sort_report_.stages) report.stages.push_back(stage);
  return sort_status_;
}

absl::StatusOr<std::shared_ptr<PartedSort>> PartedSorts::Join(const std::string& caller_host, const SortSpec& spec,
                                                             const PartRef& part, Backend& backend,
                                                             std::size_t max_request_bytes) {
  RETURN_IF_ERROR(CheckPart(spec, part, max_request_bytes));
  const std::string key = caller_host + '\n' + part.job;
  std::lock_guard lock(mutex_);
  for (auto it = jobs_.begin(); it != jobs_.end();) it = it->second.expired() ? jobs_.erase(it) : std::next(it);
  std::shared_ptr<PartedSort> job;
  if (auto found = jobs_.find(key); found != jobs_.end()) job = found->second.lock();
  // A job whose parts all arrived takes no more; its id may start a new Sort while the old one answers.
  if (job != nullptr && !job->AllArrived()) {
    absl::Status joined = job->Join(spec, part);
    // A part that does not fit its job means the caller's parts are broken: fail them all now rather
    // than leave the good ones waiting for a part that will not come.
    if (!joined.ok()) job->Fail(part.index, joined);
    RETURN_IF_ERROR(joined);
    return job;
  }
  if (jobs_.size() >= max_jobs_) {
    return absl::ResourceExhaustedError("the server already holds " + std::to_string(max_jobs_) +
                                        " sorts arriving in parts; retry later");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PartedSortIngest> ingest, backend.StartPartedSortIngest(spec, part.total_keys));
  job = std::make_shared<PartedSort>(spec, part, std::move(ingest));
  RETURN_IF_ERROR(job->Join(spec, part));
  jobs_[key] = job;
  return job;
}

std::string PeerHost(const std::string& peer) {
  const std::size_t colon = peer.rfind(':');
  const std::size_t scheme = peer.find(':');
  if (colon == std::string::npos || colon == scheme) return peer;  // "unix:/path": no port
  return peer.substr(0, colon);
}

}  // namespace gpusort
