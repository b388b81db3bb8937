// Sorted runs of ordered bits on the device. Ranks of values in them: the searches behind merging runs
// that stay on the GPU (server/backend/cuda/device_merged_sort.h); the host bisects the key space with
// them to find, for each output position, where every run splits; the runs never leave the device. And
// the merge of two runs (a sort split in two so that the first half sorts while the second crosses PCIe,
// server/backend/cuda/split_upload_sort_job.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"

namespace gpusort::kernels {

// The most runs one search takes: a kernel parameter holds them all.
inline constexpr int kMaxSortedRuns = 64;

// Runs of ascending ordered bits (KeyWidth k32 or k64) in device memory of the calling thread's device.
struct SortedRuns {
  int count = 0;
  const void* keys[kMaxSortedRuns] = {};
  std::uint64_t length[kMaxSortedRuns] = {};
};

// For every query q (device array of `query_count` values, as uint64 whatever the width) and run r:
// ranks[q * runs.count + r] = how many keys of run r are below queries[q] (`inclusive`: at or below).
// Binary searches, one thread per (query, run).
Status RankInSortedRunsAsync(KeyWidth width, const SortedRuns& runs, const std::uint64_t* queries,
                             std::size_t query_count, bool inclusive, std::uint64_t* ranks, const Stream& stream);

// The merge of two sorted runs lying one after the other in device memory, [0, first) and
// [first, count) of `runs`, into `out` (count keys; not overlapping `runs`), on `stream`. Stable: ties
// take the first run's key first. Merge Path tiles (the merge sort's global pass, merge_sort.cu), one
// read and one write of each key. KeyWidth k32 or k64; count at most 2^31 - 1 (more: kInvalidArgument).
Status MergeTwoSortedRuns(KeyWidth width, const void* runs, std::size_t first, std::size_t count, void* out,
                          const Stream& stream);
// Outputs [out_begin, out_end) of that merge alone, into the same places of `out`: a merge in slices, each
// of which can leave (a copy out) while the next is merged. Any bounds inside [0, count].
Status MergeTwoSortedRunsSlice(KeyWidth width, const void* runs, std::size_t first, std::size_t count, void* out,
                               std::size_t out_begin, std::size_t out_end, const Stream& stream);

}  // namespace gpusort::kernels
