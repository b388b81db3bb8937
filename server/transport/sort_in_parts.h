// What both kinds of Sort in parts share (issue 42): one whose parts are SortStream calls (sort_parts.h)
// and one whose parts are data-port connections (data_port/socket_sorts.h). Their parts write side by
// side into one PartedSortIngest, part `index` carrying keys [Begin(index), Begin(index + 1)); a part
// that sends keys says so (Moved), so that a stall can be told from slow work; and the first part to ask
// for the sort runs it while the others wait for its answer. How parts find their job, wait for each
// other and fail together differs (a gRPC part never blocks a thread; a data connection does), and
// stays in the two classes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "absl/status/status.h"
#include "server/backend/backend.h"

namespace gpusort {

class SortInParts {
 public:
  using Clock = std::chrono::steady_clock;

  SortInParts(const SortSpec& spec, uint64_t total_keys, uint32_t parts, std::unique_ptr<PartedSortIngest> ingest)
      : spec_(spec), total_keys_(total_keys), parts_(parts), ingest_(std::move(ingest)) {}

  const SortSpec& spec() const { return spec_; }
  uint32_t parts() const { return parts_; }
  uint64_t total_keys() const { return total_keys_; }
  // Part `index` carries keys [Begin(index), Begin(index + 1)).
  std::size_t Begin(uint32_t index) const { return static_cast<std::size_t>(total_keys_ * index / parts_); }
  PartedSortIngest& ingest() { return *ingest_; }

  // Some part moved keys now; LastMoved says when that last happened (the job's making, at first).
  void Moved() { last_moved_.store(Clock::now().time_since_epoch().count()); }
  Clock::time_point LastMoved() const { return Clock::time_point(Clock::duration(last_moved_.load())); }

 protected:
  // The first caller runs `sort`, which sorts the ingest and fills the report it is given; the others
  // wait for it. Every caller gets the sort's status. `sort` runs with the sort's lock held.
  absl::Status RunSortOnce(const std::function<absl::Status(ExecutionReport&)>& sort) {
    std::lock_guard lock(sort_mutex_);
    if (!sorted_) {
      sorted_ = true;
      sort_status_ = sort(sort_report_);
    }
    return sort_status_;
  }
  // The sort's report, once RunSortOnce has returned on this thread (written once, under the lock).
  const ExecutionReport& sort_report() const { return sort_report_; }

 private:
  const SortSpec spec_;
  const uint64_t total_keys_;
  const uint32_t parts_;
  const std::unique_ptr<PartedSortIngest> ingest_;
  std::atomic<Clock::rep> last_moved_{Clock::now().time_since_epoch().count()};

  std::mutex sort_mutex_;  // held while the sort runs
  bool sorted_ = false;
  absl::Status sort_status_;
  ExecutionReport sort_report_;
};

}  // namespace gpusort
