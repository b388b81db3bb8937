// Picks and builds the backend the server runs on (--backend auto|cpu|cuda).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"

namespace gpusort {

struct BackendChoice {
  std::string backend = "auto";  // auto: CUDA when a GPU is usable, else CPU (logged either way)
  int cpu_threads = 0;
  std::string cuda_devices;            // "all" or "0,1": one engine per GPU (gpu_set.h); empty: GPU 0
  std::size_t split_from_keys = 0;     // arrays this large split across the GPUs (0: only what one cannot take)
  std::size_t max_request_bytes = 0;   // the server's --max-request-bytes (gpu_set.h: where streams go)
  int cuda_streams = 4;
  std::size_t cuda_staging_bytes = std::size_t{16} << 20;
  std::size_t cuda_memory_limit_bytes = 0;
  std::size_t cuda_stream_memory_bytes = std::size_t{64} << 20;
  int cuda_wait_spin_us = 2000;  // kernels::SetEventWaitSpin: polling before a wait for the GPU sleeps
  int cuda_wait_pollers = 0;     // kernels::SetMostEventPollers: how many may poll at once (0: one a GPU)
  std::string auto_routing = "load";  // size | load | gpu (auto_policy.h's AutoRouting)
};

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const BackendChoice& choice);

// Whether this binary was built with the CUDA backend (nvcc was found at build time).
bool BuiltWithCuda();

}  // namespace gpusort
