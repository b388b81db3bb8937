// Merging sorted runs on the host (issue 19): an array sorted in runs, each by a GPU engine (on
// several GPUs at once, or one run after another on a GPU too small for the whole), becomes one sorted
// array here. Runs are compared by the service's key order (server/core/key_order.h: equal exactly
// when the bits are), and equal keys of different runs keep run order, so runs that were each sorted
// stably merge into a stable sort of the whole: the answer is bit for bit the one sort of the whole
// array would give.
//
// How: passes over groups of runs, each pass spread over every thread by output position (co-ranking:
// slice j of a group's output takes a known number of elements from each run), each slice merged
// without branches on the keys, which on random keys a branch predicts no better than a coin: two runs
// by Merge Path, up to eight by a tournament of branch-free minimums over (key, run). A heap over all
// runs was the first version: on 9 runs of 16G keys (H200 pair, 2026-11-26) it took 30 s against the
// PCIe floor's 2.5 s, its compares all branches; two-way passes took 17.6 s.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/core/cancellation.h"
#include "server/core/dtype.h"
#include "server/core/scratch.h"

namespace gpusort::cpu {

struct SortedRuns {
  DType dtype = DType::kUInt32;
  bool descending = false;
  // R + 1 element offsets: 0 first, the element count last, never decreasing. Run r, elements
  // [bounds[r], bounds[r + 1]), is sorted in the order asked.
  std::span<const std::size_t> bounds;
  std::span<std::byte> keys;  // count * ElementSize(dtype) bytes: the runs, then the merged answer
  // Bytes that travel with each key (a value, an index), payload_width per element; 0: none.
  std::size_t payload_width = 0;
  std::span<std::byte> payload;
};

// Merges `runs` in place, on up to `threads` threads (0: every core), with scratch of the same size.
// Runs that are not in fact sorted (memory another process wrote meanwhile) give some order of the same
// elements, never a read or write outside the arrays: every pass checks its split before it merges.
// `cancellation` is looked at between passes: CANCELLED or DEADLINE_EXCEEDED then, the arrays left in
// some order of their elements. RESOURCE_EXHAUSTED when the host has no memory for the scratch.
absl::Status MergeSortedRuns(const SortedRuns& runs, int threads, const Cancellation& cancellation);

// One merge, prepared before its runs are sorted: the scratch is taken up front (no GPU time spent on an
// array the host cannot merge), and each run can move into it as soon as it is sorted, on another
// thread while the GPUs sort the next runs, so that only the last run's move is left for the end.
class RunMerge {
 public:
  // RESOURCE_EXHAUSTED when the host has no memory for the scratch. `runs`' arrays need not be sorted
  // yet; they must stay where they are until Merge returns.
  static absl::StatusOr<std::unique_ptr<RunMerge>> Prepare(const SortedRuns& runs, int threads);
  // Run r is sorted (with its payload): moves it into the scratch now if the merge starts there. Safe
  // to call from several threads at once for different runs; each at most once.
  void RunSorted(std::size_t r);
  // Merges, once every run is sorted (moving the runs RunSorted was not told of). As MergeSortedRuns.
  absl::Status Merge(const Cancellation& cancellation);

 private:
  RunMerge() = default;
  SortedRuns runs_;
  std::vector<std::size_t> bounds_;
  int threads_ = 0;
  std::size_t passes_ = 0;
  ScratchArray<std::byte> keys_, payload_;
  std::unique_ptr<std::atomic<bool>[]> copied_;
};

// The key at `key` (ElementSize(dtype) bytes) as an unsigned integer whose order is the key order, or
// its reverse when `descending`: for ranking a few candidates (top-k across runs) without a typed sort.
std::uint64_t RankBits(DType dtype, const std::byte* key, bool descending);

}  // namespace gpusort::cpu
