#include "server/backend/backend_factory.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "server/backend/auto_policy.h"
#include "server/backend/cpu/cpu_backend.h"
#ifdef GPUSORT_WITH_CUDA
#include "server/backend/cuda_backend.h"
#endif

namespace gpusort {

bool BuiltWithCuda() {
#ifdef GPUSORT_WITH_CUDA
  return true;
#else
  return false;
#endif
}

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const BackendChoice& choice) {
  // The server's flag parser checks the name too; this guards the library's other callers (the tests'
  // GPUSORT_TEST_BACKEND), for which a misspelt name would otherwise quietly mean "auto".
  if (choice.backend != "auto" && choice.backend != "cpu" && choice.backend != "cuda") {
    return absl::InvalidArgumentError("unknown backend \"" + choice.backend + "\": auto, cpu or cuda");
  }
  const std::optional<AutoRouting> routing = ParseAutoRouting(choice.auto_routing);
  if (!routing) return absl::InvalidArgumentError("unknown auto routing \"" + choice.auto_routing + "\": size, load or gpu");
  auto cpu = [&] { return MakeCpuBackend(CpuBackendOptions{.threads = choice.cpu_threads}); };
  if (choice.backend == "cpu") return cpu();
#ifdef GPUSORT_WITH_CUDA
  std::vector<int> devices;
  if (!choice.cuda_devices.empty()) {
    absl::StatusOr<std::vector<int>> parsed = ParseCudaDevices(choice.cuda_devices);
    // A list that is wrong is wrong whatever the backend; "all" without a GPU falls back like a GPU that is not usable.
    if (!parsed.ok() && (choice.backend == "cuda" || parsed.status().code() == absl::StatusCode::kInvalidArgument)) {
      return parsed.status();
    }
    if (parsed.ok()) devices = std::move(*parsed);
  }
  auto cuda = MakeCudaBackend({.engine = {.device = 0,
                                          .streams = choice.cuda_streams,
                                          .staging_bytes = choice.cuda_staging_bytes,
                                          .memory_limit_bytes = choice.cuda_memory_limit_bytes,
                                          .stream_memory_bytes = choice.cuda_stream_memory_bytes},
                               .devices = devices,
                               .split_from_keys = choice.split_from_keys,
                               .max_request_bytes = choice.max_request_bytes,
                               .cpu_threads = choice.cpu_threads,
                               .wait_spin = std::chrono::microseconds(choice.cuda_wait_spin_us),
                               .wait_pollers = static_cast<unsigned>(choice.cuda_wait_pollers),
                               .auto_routing = *routing});
  if (cuda.ok()) {
    if (choice.backend == "auto") spdlog::info("backend auto: a GPU is usable, serving from CUDA");
    return cuda;
  }
  if (choice.backend == "cuda") return cuda.status();
  spdlog::info("backend auto: {}; serving from the CPU backend", std::string(cuda.status().message()));
  return cpu();
#else
  if (choice.backend == "cuda") {
    return absl::UnavailableError("--backend cuda: this gpusort-server was built without CUDA (no nvcc)");
  }
  spdlog::info("backend auto: built without CUDA, serving from the CPU backend");
  return cpu();
#endif
}

}  // namespace gpusort
