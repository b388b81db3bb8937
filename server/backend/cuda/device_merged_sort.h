// A whole-array Sort of keys alone or with their indices that one pass on a GPU cannot take (more than the GPU paths' 2^31-1
// keys, or more than its memory holds with the sort's second buffer) but whose keys fit the memory of
// the GPUs given, once (issue 19). The keys cross PCIe once each way, which is the floor:
//
//  1. runs: the array is cut into runs, an equal share of them per GPU; each run is copied to its place
//     in its GPU's buffer of that GPU's keys, turned into ordered bits and radix-sorted there while the
//     next run crosses. Every GPU works on its share at once, over its own link.
//  2. splits: the host bisects the key space with searches in the sorted runs (kernels/sorted_runs.h)
//     to find where every run splits at each block boundary of the answer: block j takes, from every
//     run, the keys that belong at positions [j * B, (j + 1) * B) of the sorted array.
//  3. blocks: each GPU makes an equal share of the blocks, in order: a block's pieces are gathered on
//     that GPU (from the other GPUs' runs by peer copies), radix-sorted over the bits its key range
//     spans (few: the blocks are narrow ranges of the key space), turned back into keys and copied to
//     their place in the answer while the next block is gathered and sorted.
//
// Why not the host merge (sort_in_runs.h) for these: it moves every key through host memory once more
// per pass and ran at 4 to 5 times the PCIe floor on the H200 pair (docs/benchmarks-log.md, issue 19), where a
// GPU re-sorts a block in a fraction of the time its copy back takes.
//
// Keys more than the GPUs hold (issue 44) take the same three steps with the runs kept in pinned host
// memory instead: each run crosses to a GPU, is sorted there and crosses back to the host, and the blocks
// gather their pieces from the host. Every key crosses PCIe twice each way, against the host merge's
// once each way plus a merge at host memory speed: the copies run both ways at once (two lanes a GPU,
// one run coming in while the other goes out), and the GPUs search the host runs in place for the
// splits. The runs' pinned memory is kept for the next such sort (pinning costs more than the copies).
//
// Keys alone: equal ordered bits are equal keys, so how ties split between blocks cannot show in the
// answer. With indices (issue 44) each run sorts its own uint32 positions with its keys (stably), the
// splits take equal keys from earlier runs first (run_splits.h), and a block's gathered positions
// become the array's int64 ones before its stable sort: equal keys end in the order of their indices,
// as the host merge and the CPU engine give them. Values payloads keep the host merge. Every device
// buffer is taken
// before the first copy: where the memory is not there, nothing is done and the caller sorts in runs
// merged on the host.
#pragma once

#include <cstddef>
#include <span>

#include "absl/status/statusor.h"
#include "server/backend/cuda/device_context.h"
#include "server/core/cancellation.h"
#include "server/core/execution_report.h"
#include "server/core/spec.h"

namespace gpusort {

// Whether a request is of the kind this sort takes: one array (no rows or segments), keys alone or
// with indices, by AUTO or RADIX.
bool SortMergesOnDevice(const SortSpec& spec);

// Sorts the `count` keys of keys_in (registered, pinned or pageable host memory; it may be keys_out
// itself) into keys_out, and their indices into indices_out where the spec asks for them, on the GPUs
// of `contexts` (one or more, each its own GPU), in runs of at most `max_run_keys`, kept on the GPUs
// where they fit (their free memory, within --cuda-memory-limit-bytes) and else on the host. Returns
// false, with nothing done, where it declines: a request SortMergesOnDevice refuses, too little device
// memory for even the host runs' working buffers, or no pinned host memory for the runs. Stages: "h2d"
// (the runs crossing and sorted), "device_merge" (the splits, and the blocks sorted and copied back).
absl::StatusOr<bool> SortMergedOnDevices(std::span<DeviceContext* const> contexts, const SortSpec& spec,
                                         std::size_t count, std::span<const std::byte> keys_in,
                                         std::span<std::byte> keys_out, std::span<int64_t> indices_out,
                                         std::size_t max_run_keys, const Cancellation& cancellation,
                                         ExecutionReport& report);

}  // namespace gpusort
