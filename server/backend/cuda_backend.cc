#include "server/backend/cuda_backend.h"

#include "server/backend/auto_router.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/core/status_macros.h"

namespace gpusort {

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const CudaBackendOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Backend> gpu, MakeCudaEngine(options.engine));
  return MakeAutoRouter(MakeCpuBackend({.threads = options.cpu_threads}), std::move(gpu), options.auto_routing);
}

}  // namespace gpusort
