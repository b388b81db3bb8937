// cudaError_t -> kernels::Status, with the CUDA error's name and text and what was being done.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"

namespace gpusort::kernels {

// Errors after which this process's context on the device is unusable for good: CUDA's documentation of
// each says "any further CUDA work will return the same error. To continue using CUDA, the process must
// be terminated and relaunched" (driver_types.h). The server stops serving on them (kDeviceLost) instead
// of failing every later request one by one.
inline bool IsStickyCudaError(cudaError_t error) {
  switch (error) {
    case cudaErrorECCUncorrectable:     // 214
    case cudaErrorNvlinkUncorrectable:  // 220
    case cudaErrorContained:            // 226: a hardware error the GPU contained
    case cudaErrorIllegalAddress:       // 700
    case cudaErrorLaunchTimeout:        // 702
    case cudaErrorAssert:               // 710: a device-side assert
    case cudaErrorHardwareStackError:   // 714
    case cudaErrorIllegalInstruction:   // 715
    case cudaErrorMisalignedAddress:    // 716
    case cudaErrorInvalidAddressSpace:  // 717
    case cudaErrorInvalidPc:            // 718
    case cudaErrorLaunchFailure:        // 719
    case cudaErrorTensorMemoryLeak:     // 721
    case cudaErrorMpsClientTerminated:  // 810
    case cudaErrorExternalDevice:       // 911
      return true;
    default:
      return false;
  }
}

inline Status FromCuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::Ok();
  StatusCode code = StatusCode::kInternal;
  if (error == cudaErrorMemoryAllocation) code = StatusCode::kOutOfMemory;
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver ||
      error == cudaErrorInvalidDevice || error == cudaErrorDevicesUnavailable) {
    code = StatusCode::kUnavailable;
  }
  if (IsStickyCudaError(error)) {
    code = StatusCode::kDeviceLost;
  } else {
    // A failed call also becomes this thread's "last error", which the next launch check
    // (cudaGetLastError after a kernel launch) would report as its own: a request that ran out of
    // memory, or any other recoverable failure, would then fail the next request on this worker thread
    // too. It has been reported here, so clear it. Sticky errors cannot be cleared.
    (void)cudaGetLastError();
  }
  return Status(code, std::string(what) + ": " + cudaGetErrorName(error) + " (" +
                          cudaGetErrorString(error) + ")");
}

// For calls whose failure changes nothing for the caller (frees, destroys, counters): the error is
// dropped, and cleared for the reason FromCuda gives.
inline void IgnoreCudaError(cudaError_t error) {
  if (error != cudaSuccess && !IsStickyCudaError(error)) (void)cudaGetLastError();
}

inline cudaStream_t Native(const Stream& stream) { return static_cast<cudaStream_t>(stream.native()); }

}  // namespace gpusort::kernels

#define GPUSORT_CUDA_RETURN_IF_ERROR(call) \
  GPUSORT_KERNELS_RETURN_IF_ERROR(::gpusort::kernels::FromCuda((call), #call))

// After a kernel launch: launch errors (bad configuration) surface here, not at the next call.
#define GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED(what) \
  GPUSORT_KERNELS_RETURN_IF_ERROR(::gpusort::kernels::FromCuda(cudaGetLastError(), what))
