// The CUDA backend the server serves from: the router (auto_router.h) above the set of GPU engines
// (gpu_set.h: one CUDA engine, cuda/cuda_engine.h, per GPU) and the CPU engine, which takes the work
// AUTO finds too small to pay for the trip over PCIe (auto_policy.h) and the requests that name CPU.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend/auto_policy.h"
#include "server/backend/backend.h"
#include "gpusort/kernels/runtime.h"
#include "server/backend/cuda/cuda_engine.h"

namespace gpusort {

// The engines' own options, not a copy of them.
struct CudaBackendOptions {
  CudaEngineOptions engine;  // every GPU's engine; .device is the one GPU when `devices` is empty
  // The GPUs to serve from (--cuda-devices), each with its own engine; empty: engine.device alone.
  std::vector<int> devices;
  // A whole-array Sort or one-row TopK of at least this many keys is split across the GPUs (0: only
  // what one GPU cannot take; gpu_set.h).
  std::size_t split_from_keys = 0;
  // The server's --max-request-bytes: where a stream that long would not fit one GPU, streams are
  // collected on the host instead of copied to a GPU as they arrive (gpu_set.h). 0: always to a GPU.
  std::size_t max_request_bytes = 0;
  int cpu_threads = 0;  // the CPU engine's threads (0: every core)
  // How long a thread waiting for a GPU event polls before it sleeps, for the whole process
  // (kernels::SetEventWaitSpin; --cuda-wait-spin-us).
  std::chrono::microseconds wait_spin = kernels::kDefaultEventWaitSpin;
  // How many of those threads may poll at once (kernels::SetMostEventPollers; 0: one a GPU served).
  // 0: one for each GPU served.
  unsigned wait_pollers = 0;
  AutoRouting auto_routing = AutoRouting::kSize;  // how AUTO picks an engine
};

// UNAVAILABLE (with the reason) when no GPU is usable, so that --backend auto can fall back.
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const CudaBackendOptions& options);

// The GPU ordinals a --cuda-devices value names: "all" (every GPU this process sees) or a list such as
// "0,2". INVALID_ARGUMENT for anything else, a repeated GPU or an empty list; UNAVAILABLE for "all"
// when there is no GPU.
absl::StatusOr<std::vector<int>> ParseCudaDevices(const std::string& value);

}  // namespace gpusort
