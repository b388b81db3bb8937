// Every GPU of a node behind one Backend (issue 19): one engine per GPU, each with its own context,
// streams, memory pool and pinned staging (cuda/cuda_engine.h), and this set above them, which
//  - places each request on the GPU with the least work in flight, a device region's requests on the
//    GPU its memory lives on;
//  - serves a Sort or TopK too large for one GPU (its memory, or the GPU paths' 2^31 keys) in runs, on
//    every GPU at once, merged on the host (sort_in_runs.h); with one GPU, the runs take turns;
//  - keeps serving from the GPUs left when one fails (a sticky CUDA error loses that GPU's context for
//    good): Healthy() is OK while one GPU serves, and devices() says which do.
// The router (auto_router.h) sits above it as above one GPU engine: the service sees one Backend.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"

namespace gpusort {

struct GpuSetMember {
  int ordinal = 0;                  // the GPU's CUDA ordinal, matched against a device region's home
  std::unique_ptr<Backend> engine;  // the engine of that GPU alone
  // Device memory one request may hold there (the engine's --cuda-memory-limit-bytes, else the GPU's
  // memory); sizes the runs of an array too large for it. 0: no limit but the keys per request.
  std::size_t memory_bytes = 0;
};

// Sorts a whole array's keys (with their indices where asked) in runs on the GPUs `ordinals` names (the
// first is the one the set placed it on), kept in their memory or, where it cannot hold them, in pinned
// host memory, and merges them there; reads work.source(), writes work.buffers.keys and indices_out,
// names every GPU that took part in report.device. false, with nothing done, where it declines (values
// payloads, too little memory): the set then sorts in runs merged on the host.
using MergeOnDevices = std::function<absl::StatusOr<bool>(std::span<const int> ordinals, const SortWork& work,
                                                          std::size_t max_run_keys, const Cancellation& cancellation,
                                                          ExecutionReport& report)>;

struct GpuSetOptions {
  // The most keys one engine takes in one request (the GPU paths index with 32-bit offsets).
  std::size_t max_keys_per_run = (std::size_t{1} << 31) - 1;
  // A whole-array Sort or a one-row TopK of at least this many keys is split across every GPU serving
  // (0: only what one GPU cannot take is split).
  std::size_t split_from_keys = 0;
  int merge_threads = 0;  // host threads merging runs (0: every core)
  // The most bytes of keys one request may bring (the server's --max-request-bytes). A stream's length
  // is not known when it starts: where a stream that long would not fit one GPU, streams are collected
  // on the host and sorted like a whole array (in runs when they must be), instead of being copied to
  // one GPU as they arrive. 0: streams always go to one GPU.
  std::size_t max_request_bytes = 0;
  // The GPU a device region's memory lives on, from its descriptor; unset: the first GPU that serves.
  std::function<absl::StatusOr<int>(int fd)> home_of_region;
  // The merge on the GPUs themselves (the CUDA backend's, over cuda/device_merged_sort.h); unset: runs
  // always merge on the host.
  MergeOnDevices merge_on_devices;
};

std::unique_ptr<Backend> MakeGpuSet(std::vector<GpuSetMember> members, GpuSetOptions options);

}  // namespace gpusort
