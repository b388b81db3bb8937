#include "kernels/testing/faults.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "cuda_status.h"

namespace gpusort::kernels::testing {
namespace {

// The pointer is a parameter, so the compiler cannot see that it is null and must emit the store.
__global__ void StoreThroughNull(volatile int* target) { *target = 1; }

constexpr std::size_t kGranule = std::size_t{2} << 20;  // the driver hands out device memory in 2 MiB pages
constexpr std::size_t kFirstBlock = std::size_t{1} << 30;
constexpr auto kPoolIdleWait = std::chrono::seconds(30);

}  // namespace

Status TriggerIllegalAddress(const Stream& stream) {
  StoreThroughNull<<<1, 1, 0, Native(stream)>>>(nullptr);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("launching the kernel that stores through a null pointer");
  return FromCuda(cudaStreamSynchronize(Native(stream)), "waiting for the kernel that stores through a null pointer");
}

Status DeviceMemoryHog::TakeAllBut(std::size_t leave_free_bytes) {
  int device = 0;
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  cudaMemPool_t pool = nullptr;
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaDeviceGetDefaultMemPool(&pool, device));
  // A server's calls give their memory back a moment after their answers went out (a stream call's
  // buffers go when gRPC is done with the call). Memory that came back after the count below would
  // sit in the pool's cache, and requests would find room there: wait until the pool lends nothing.
  const auto give_up = std::chrono::steady_clock::now() + kPoolIdleWait;
  for (;;) {
    std::uint64_t used = 0;
    GPUSORT_CUDA_RETURN_IF_ERROR(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    if (used == 0) break;
    if (std::chrono::steady_clock::now() > give_up) {
      return Status(StatusCode::kInternal, "the device's memory pool still lends " + std::to_string(used) +
                                               " bytes after 30 s: something holds device memory");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());  // frees still queued on streams land first
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaMemPoolTrimTo(pool, 0));
  // Large blocks first, halving when the driver cannot find one that large, until what is free is
  // within one page of what is to be left.
  std::size_t block = kFirstBlock;
  for (;;) {
    std::size_t free_bytes = 0, total_bytes = 0;
    GPUSORT_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (free_bytes <= leave_free_bytes + kGranule) return Status::Ok();
    const std::size_t want = std::min(block, (free_bytes - leave_free_bytes) / kGranule * kGranule);
    void* data = nullptr;
    const cudaError_t error = cudaMalloc(&data, want);
    if (error == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // expected near the end; not this thread's error to keep
      if (block <= kGranule) return Status::Ok();
      block /= 2;
      continue;
    }
    GPUSORT_KERNELS_RETURN_IF_ERROR(FromCuda(error, "cudaMalloc"));
    blocks_.push_back(data);
    held_bytes_ += want;
  }
}

void DeviceMemoryHog::Release() {
  for (void* data : blocks_) IgnoreCudaError(cudaFree(data));
  blocks_.clear();
  held_bytes_ = 0;
}

}  // namespace gpusort::kernels::testing
