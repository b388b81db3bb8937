// One Sort of keys alone larger than the GPUs take, as a sample sort (issue 44): splitters sampled from
// the array cut it on the host into buckets in the sort's order (cpu/bucket_partition.h), each bucket
// small enough for one run on a GPU; each bucket then crosses to a GPU once, is sorted there and comes
// back into its final place, so nothing is left to merge. Against sorting runs and merging them on the
// host (sort_in_runs.h): the host makes one partition pass (two reads, one write) and copies each bucket
// back beside the GPUs' work, where the merge made one or two passes of branch-free tournaments after
// them (16G keys on one H200: 8.7 s of 11.7, BENCHMARKS.md). A bucket the sample misjudged past a run's
// size is sorted in runs and merged, as before; a bucket of equal keys is sorted already.
//
// Why buckets by sampled splitters: the literature's out-of-core GPU sorts (RMG sort, BTW'23; the
// SIGMOD'22 study of multi-GPU sorting) lose their time in the host's part, not on the GPUs; a sample
// sort keeps the host's part to passes at memory speed that need no comparisons between runs.
//
// NOT USED YET (issue 44, 2026-11-29): exact (tests/cpu/sort_in_buckets_test.cc), but slower than the
// runs and their merge on the H200 host: 4G u32 keys under a 4 GiB device limit, 16 cores, sort 7.8-8.1 s
// (partition 5.7-6.1 s) against 6.7 s (merge 6.0 s). The partition has since gone from 1.25 to 0.70 s on
// the dev VM (256M keys, 2 threads: a table for the buckets, the loop's state in registers), not yet
// measured on the GPU host. gpu_set.cc goes on calling SortInRuns until a measurement there says
// otherwise (docs/benchmarks-log.md, "Out of core in buckets, a first step").
#pragma once

#include <span>

#include "absl/status/status.h"
#include "server/backend/backend.h"
#include "server/backend/sort_in_runs.h"

namespace gpusort {

// Whether a Sort can be served in buckets: keys alone (a payload would cross with its keys, and indices
// would count from the bucket), one array (not rows or segments).
bool SortSplitsInBuckets(const SortSpec& spec);

// Sorts buffers.keys (reading keys_in when pinned, as a Sort job in registered memory does) in buckets,
// each sorted by one of plan.engines as one run. The answer is bit for bit the one sort of the whole
// array gives, stable where asked. RESOURCE_EXHAUSTED when the host has no memory for the buckets.
absl::Status SortInBuckets(const SortSpec& spec, std::span<const std::byte> keys_in, const SortBuffers& buffers,
                           bool pinned, const RunPlan& plan, const Cancellation& cancellation, ExecutionReport& report);

}  // namespace gpusort
