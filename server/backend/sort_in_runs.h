// One Sort or TopK served in runs (issue 19): the array is cut into contiguous runs, each small enough
// for one GPU's memory and for the GPU paths' 32-bit offsets; the runs go to the engines given (every
// GPU of the node at once, or one GPU run after run) and the host merges what they return
// (cpu/run_merge.h). The answer is bit for bit the one sort of the whole array would give, stable where
// asked, with every payload; top-k is each run's top-k ranked again on the host.
//
// Why the host merges: it is the only memory that holds the whole array when the array is larger than
// a GPU, and the runs come back to it anyway. What that costs beside the PCIe floor is in BENCHMARKS.md
// ("Issue 19"), with what a merge on the GPUs would save.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "server/backend/backend.h"

namespace gpusort {

struct RunPlan {
  std::vector<Backend*> engines;  // run r goes to engines[r % engines.size()]; each runs its runs in turn
  std::size_t run_keys = 0;       // the most keys of one run
  int merge_threads = 0;          // host threads for the merge (0: every core)
};

// Whether a request can be served in runs: a Sort of one whole array (not rows or segments); a TopK
// of one row.
bool SortSplitsInRuns(const SortSpec& spec);
bool TopKSplitsInRuns(const TopKSpec& spec);

// The most keys of one run on a device with `memory_bytes` for requests: the keys, their payload and
// the sort's second buffer, with room to spare, and never more than `max_keys`.
std::size_t SortRunKeys(const SortSpec& spec, std::size_t memory_bytes, std::size_t max_keys);
std::size_t TopKRunKeys(const TopKSpec& spec, std::size_t memory_bytes, std::size_t max_keys);

// Sorts buffers as a Sort job does (pinned: in registered memory, reading keys_in), in runs.
absl::Status SortInRuns(const SortSpec& spec, std::span<const std::byte> keys_in, const SortBuffers& buffers,
                        bool pinned, const RunPlan& plan, const Cancellation& cancellation, ExecutionReport& report);

// As a TopK job (pinned: in registered memory), in runs; a TopK of one row.
absl::Status TopKInRuns(const TopKSpec& spec, const TopKBuffers& buffers, bool pinned, const RunPlan& plan,
                        const Cancellation& cancellation, ExecutionReport& report);

}  // namespace gpusort
