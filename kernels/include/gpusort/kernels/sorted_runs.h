// Ranks of values in sorted runs of ordered bits, on the device: the searches behind merging runs that
// stay on the GPU (server/backend/cuda/device_merged_sort.h). The host bisects the key space with them
// to find, for each output position, where every run splits; the runs never leave the device.
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

}  // namespace gpusort::kernels
