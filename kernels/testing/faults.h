// Test-only: ways to make the GPU really fail, for the GPU fault tests (tests/gpu/gpu_oom_test.cc and
// gpu_fault_test.cc). Built into gpusort_kernels_testing, which only those tests link: never the server.
// Plain C++, like the kernels' own headers.
#pragma once

#include <cstddef>
#include <vector>

#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"

namespace gpusort::kernels::testing {

// Launches a kernel on `stream` that stores through a null pointer and waits for it. Afterwards this
// process's context on the current device is lost for good (cudaErrorIllegalAddress, a sticky error),
// as after a kernel bug or a hardware fault in production. Returns what the wait reported: kDeviceLost.
Status TriggerIllegalAddress(const Stream& stream);

// Takes the current device's memory with plain cudaMalloc (not managed memory, not the pool) until
// about `leave_free_bytes` are left, as another process on a shared GPU would. First it waits (up to
// 30 s) until the device's default pool (the one DeviceMemoryPool uses) lends nothing, and hands what
// the pool keeps cached back to the driver, so that no memory comes free later. Gives everything back
// when destroyed or on Release().
class DeviceMemoryHog {
 public:
  DeviceMemoryHog() = default;
  ~DeviceMemoryHog() { Release(); }
  DeviceMemoryHog(const DeviceMemoryHog&) = delete;
  DeviceMemoryHog& operator=(const DeviceMemoryHog&) = delete;

  Status TakeAllBut(std::size_t leave_free_bytes);
  void Release();
  std::size_t held_bytes() const { return held_bytes_; }

 private:
  std::vector<void*> blocks_;
  std::size_t held_bytes_ = 0;
};

}  // namespace gpusort::kernels::testing
