// cudaError_t -> kernels::Status, with the CUDA error's name and text and what was being done.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"

namespace gpusort::kernels {

inline Status FromCuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::Ok();
  StatusCode code = StatusCode::kInternal;
  if (error == cudaErrorMemoryAllocation) code = StatusCode::kOutOfMemory;
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver ||
      error == cudaErrorInvalidDevice || error == cudaErrorDevicesUnavailable) {
    code = StatusCode::kUnavailable;
  }
  return Status(code, std::string(what) + ": " + cudaGetErrorName(error) + " (" +
                          cudaGetErrorString(error) + ")");
}

inline cudaStream_t Native(const Stream& stream) { return static_cast<cudaStream_t>(stream.native()); }

}  // namespace gpusort::kernels

#define GPUSORT_CUDA_RETURN_IF_ERROR(call) \
  GPUSORT_KERNELS_RETURN_IF_ERROR(::gpusort::kernels::FromCuda((call), #call))

// After a kernel launch: launch errors (bad configuration) surface here, not at the next call.
#define GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED(what) \
  GPUSORT_KERNELS_RETURN_IF_ERROR(::gpusort::kernels::FromCuda(cudaGetLastError(), what))
