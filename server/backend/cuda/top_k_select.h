// TopK on the GPU through the selection kernels (kernels/top_k.h: RADIX_SELECT, SMALL_K, THREAD_LISTS):
// keys cross as ordered bits (complemented for the largest), the kernel writes the k results of every
// row straight into the reply's layout (ordered bits and int64 positions), and only those come back.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "server/backend/backend.h"
#include "server/backend/cuda/device_context.h"

namespace gpusort {

bool IsTopKSelection(Algorithm algorithm);

// INVALID_ARGUMENT naming the limit when `k` is more than `algorithm` can select per row.
absl::Status CheckTopKSelectionLimits(Algorithm algorithm, std::size_t k);

// Runs one TopK with `algorithm` (one of the selection kernels; already checked against its limits).
absl::Status SelectTopKOnGpu(DeviceContext& context, Algorithm algorithm, const TopKSpec& spec,
                             const TopKBuffers& buffers, const Cancellation& cancellation, ExecutionReport& report);

}  // namespace gpusort
