// The CUDA backend: Sort and TopK for every option of the API on one GPU, answering exactly as the CPU
// backend does (the same key order, bit for bit). AUTO sends arrays too small to pay for the trip over
// PCIe to the CPU backend it holds (auto_policy.h).
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"

namespace gpusort {

struct CudaBackendOptions {
  int device = 0;
  int streams = 4;                                    // concurrent jobs on the GPU
  std::size_t staging_bytes = std::size_t{16} << 20;  // per pinned staging buffer (two per stream)
  int cpu_threads = 0;                                // the CPU backend AUTO uses for tiny arrays
  std::size_t memory_limit_bytes = 0;                 // device memory requests may hold at once; 0: all
};

// UNAVAILABLE (with the reason) when no GPU is usable, so that --backend auto can fall back.
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const CudaBackendOptions& options);

}  // namespace gpusort
