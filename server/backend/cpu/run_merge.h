// Merging sorted runs on the host (issue 19): an array sorted in runs, each by a GPU engine (on
// several GPUs at once, or one run after another on a GPU too small for the whole), becomes one sorted
// array here. Runs are compared by the service's key order (server/core/key_order.h: equal exactly
// when the bits are), and equal keys of different runs keep run order, so runs that were each sorted
// stably merge into a stable sort of the whole: the answer is bit for bit the one sort of the whole
// array would give.
//
// The merge is split across threads by output position: for each slice boundary p, a search over the
// key space finds how many elements of each run come before p (the same co-ranking as Merge Path, for
// any number of runs), and each slice then merges its own part of every run on its own thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "server/core/dtype.h"

namespace gpusort::cpu {

struct SortedRuns {
  DType dtype = DType::kUInt32;
  bool descending = false;
  // R + 1 element offsets into the arrays below: 0 first, the element count last, never decreasing.
  // Run r, elements [bounds[r], bounds[r + 1]), is sorted in the order asked.
  std::span<const std::size_t> bounds;
  std::span<const std::byte> keys;  // count * ElementSize(dtype) bytes
  // Bytes that travel with each key (a value, an index), payload_width per element; 0: none.
  std::size_t payload_width = 0;
  std::span<const std::byte> payload;
};

struct MergeTarget {
  std::span<std::byte> keys;     // count * ElementSize(dtype) bytes; never overlapping the runs
  std::span<std::byte> payload;  // count * payload_width bytes, when there is a payload
};

// Merges `runs` into `out` on up to `threads` threads (0: every core). The runs must not change while
// this runs; runs that are not in fact sorted (memory another process wrote meanwhile) give some order
// of the same elements, never a read or write outside the arrays.
void MergeSortedRuns(const SortedRuns& runs, const MergeTarget& out, int threads);

// The key at `key` (ElementSize(dtype) bytes) as an unsigned integer whose order is the key order, or
// its reverse when `descending`: for ranking a few candidates (top-k across runs) without a typed sort.
std::uint64_t RankBits(DType dtype, const std::byte* key, bool descending);

}  // namespace gpusort::cpu
