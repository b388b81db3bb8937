// The CUDA backend the server serves from: the router (auto_router.h) above the CUDA engine
// (cuda/cuda_engine.h) and the CPU engine, which takes the work AUTO finds too small to pay for the
// trip over PCIe (auto_policy.h) and the requests that name CPU.
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "server/backend/auto_policy.h"
#include "server/backend/backend.h"
#include "server/backend/cuda/cuda_engine.h"

namespace gpusort {

// The two engines' own options, not a copy of them.
struct CudaBackendOptions {
  CudaEngineOptions engine;
  int cpu_threads = 0;  // the CPU engine's threads (0: every core)
  AutoRouting auto_routing = AutoRouting::kSize;  // how AUTO picks an engine
};

// UNAVAILABLE (with the reason) when no GPU is usable, so that --backend auto can fall back.
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const CudaBackendOptions& options);

}  // namespace gpusort
