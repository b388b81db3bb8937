// The CUDA backend's SortBatch for 32-bit keys: every request of a batch in one radix sort over 64-bit
// composite keys (request number << 32 | the key's ordered bits). The sort is stable, so it orders by
// request first and by key within one, and each request's sorted keys land in exactly the places its
// input held: one launch for the batch, every caller's keys kept apart by construction.
#pragma once

#include <span>

#include "absl/status/status.h"
#include "server/backend/backend.h"
#include "server/backend/cuda/device_context.h"

namespace gpusort {

// For 4-byte dtypes and kNone / kIndices only; the caller routes everything else.
absl::Status SortBatchOnGpu(DeviceContext& context, const SortSpec& spec, std::span<BatchItem> items,
                            const std::string& device_name);

}  // namespace gpusort
