// Registration of shared-memory regions with the GPU (cudaHostRegister), so that a job's keys can
// cross PCIe by DMA straight from and to them (registered_host_ends.h).
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"

namespace gpusort {

// cudaHostRegister for the region's lifetime.
absl::StatusOr<std::unique_ptr<HostMemoryPin>> PinForDevice(std::span<std::byte> memory);

}  // namespace gpusort
