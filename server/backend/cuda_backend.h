// The CUDA backend the server serves from: the router (auto_router.h) above the CUDA engine
// (cuda/cuda_engine.h) and the CPU engine, which takes the work AUTO finds too small to pay for the
// trip over PCIe (auto_policy.h) and the requests that name CPU.
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
  int cpu_threads = 0;                                // the CPU engine's threads (0: every core)
  std::size_t memory_limit_bytes = 0;                 // device memory requests may hold at once; 0: all
};

// UNAVAILABLE (with the reason) when no GPU is usable, so that --backend auto can fall back.
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const CudaBackendOptions& options);

}  // namespace gpusort
