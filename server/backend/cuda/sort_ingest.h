// The CUDA engine's SortIngest: a streamed Sort whose keys go to the GPU while the stream still runs.
//
// (The router, auto_router.h, holds a short stream's first pieces on the host until they reach AUTO's
// GPU threshold, so that a short stream is still answered by the CPU as its unary form would be, and
// only then starts this ingest.) Every piece is turned into
// ordered bits in a slot's pinned buffers and copied into a device buffer that grows by doubling (a
// device-to-device copy costs microseconds where the wire costs milliseconds). The slot is held only
// while a piece crosses, never while the caller is sending, so slow streams cannot starve other calls.
#pragma once

#include <memory>

#include "server/backend/backend.h"
#include "server/backend/cuda/device_context.h"

namespace gpusort {

std::unique_ptr<SortIngest> MakeCudaSortIngest(DeviceContext& context, const SortSpec& spec, std::string device_name);
// The parted form, for arrays that go to the GPU: the device buffer for all `total_keys` is taken now.
absl::StatusOr<std::unique_ptr<PartedSortIngest>> MakeCudaPartedSortIngest(DeviceContext& context,
                                                                         const SortSpec& spec, std::string device_name,
                                                                         std::size_t total_keys);

}  // namespace gpusort
