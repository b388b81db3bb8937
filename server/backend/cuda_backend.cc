#include "server/backend/cuda_backend.h"

#include "server/backend/auto_router.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/backend/cuda/cuda_engine.h"
#include "server/core/status_macros.h"

namespace gpusort {

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const CudaBackendOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Backend> gpu,
                   MakeCudaEngine({.device = options.device,
                                   .streams = options.streams,
                                   .staging_bytes = options.staging_bytes,
                                   .memory_limit_bytes = options.memory_limit_bytes}));
  return MakeAutoRouter(MakeCpuBackend({.threads = options.cpu_threads}), std::move(gpu));
}

}  // namespace gpusort
