// The CUDA engine: Sort and TopK for every option of the API on one GPU, answering exactly as the CPU
// engine does (the same key order, bit for bit). It runs on the GPU whatever it is given (AUTO means
// its own choice of kernel); which requests are worth the trip over PCIe is the router's decision
// (server/backend/auto_router.h), which the server's CUDA backend puts above this engine and the CPU
// engine (server/backend/cuda_backend.h).
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"

namespace gpusort {

struct CudaEngineOptions {
  int device = 0;
  int streams = 4;                                    // concurrent jobs on the GPU
  std::size_t staging_bytes = std::size_t{16} << 20;  // per pinned staging buffer (two per stream)
  std::size_t memory_limit_bytes = 0;                 // device memory requests may hold at once; 0: all
  std::size_t stream_memory_bytes = std::size_t{64} << 20;  // kept per stream for its jobs (StreamSlot::kept)
};

class DeviceContext;

// The context (streams, pools, health) of options.device's GPU; UNAVAILABLE (with the reason) when no
// GPU is usable, so that --backend auto can fall back.
absl::StatusOr<std::shared_ptr<DeviceContext>> MakeDeviceContext(const CudaEngineOptions& options);

// An engine on `context`'s GPU. Shared: the CUDA backend's merge across GPUs (cuda_backend.cc) runs on
// the contexts of the GPUs it uses too.
std::unique_ptr<Backend> MakeCudaEngineOn(std::shared_ptr<DeviceContext> context);

// Both at once (tests and benches of one engine).
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaEngine(const CudaEngineOptions& options);

}  // namespace gpusort
