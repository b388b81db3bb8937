// Device regions on the CUDA engine: a caller's device memory, exported as a descriptor and imported
// here for the engine's GPU (kernels/shared_device_memory.h), while the region is registered. Jobs on
// it use the registered ends (registered_host_ends.h), whose copies stay on the GPU for such ranges.
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"

namespace gpusort {

// Imports `bytes` of the memory behind `fd` for GPU `device`; the caller keeps and closes `fd`.
absl::StatusOr<std::unique_ptr<DeviceMemoryImport>> ImportForDevice(int fd, std::size_t bytes, int device);

// The GPU whose memory is behind `fd` (not taken): a server on several GPUs imports it there.
absl::StatusOr<int> HomeDeviceOf(int fd);

}  // namespace gpusort
