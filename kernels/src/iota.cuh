// Writes 0, 1, ..., count-1: the input positions an argsort carries as its payload.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda_status.h"

namespace gpusort::kernels {

static __global__ void IotaKernel(std::uint32_t* out, std::size_t count) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = static_cast<std::uint32_t>(i);
  }
}

inline Status IotaAsync(std::uint32_t* out, std::size_t count, cudaStream_t stream) {
  if (count == 0) return Status::Ok();
  constexpr int kThreads = 256;
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  IotaKernel<<<static_cast<unsigned>(blocks < 65535 * 16 ? blocks : 65535 * 16), kThreads, 0, stream>>>(
      out, count);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("iota kernel");
  return Status::Ok();
}

}  // namespace gpusort::kernels
