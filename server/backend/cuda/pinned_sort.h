// The CUDA backend's Sort for arrays in registered host memory (shared-memory regions): the keys cross
// PCIe by DMA straight from and to the caller's region, and turn into ordered bits and back on the
// device, so that the host CPU never reads or writes them. About 3 ms of device work for 64 MiB of keys
// against ~15 ms when they pass through the staging buffers.
#pragma once

#include <memory>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/backend/backend.h"
#include "server/backend/cuda/device_context.h"

namespace gpusort {

// cudaHostRegister for the region's lifetime.
absl::StatusOr<std::unique_ptr<HostMemoryPin>> PinForDevice(std::span<std::byte> memory);

// keys_in -> buffers.keys (and buffers.indices_out for kIndices). Not for kValues.
absl::Status SortPinnedOnGpu(DeviceContext& context, const SortSpec& spec, std::span<const std::byte> keys_in,
                             const SortBuffers& buffers, const Cancellation& cancellation, ExecutionReport& report);

}  // namespace gpusort
