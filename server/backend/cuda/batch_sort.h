// The CUDA backend's SortBatch: every request of a batch sorted by one kernel launch, each caller's
// keys kept apart by construction. Two forms:
// - Rows (any key width): each request is one row of the segmented bitonic sort (BitonicSortRows),
//   padded to the batch's longest request. For batches whose longest request fits one bitonic tile
//   (4096 keys) and that padding does not blow up.
// - Composite radix (32-bit keys): one radix sort over 64-bit keys (request number << 32 | the key's
//   ordered bits). The sort is stable, so it orders by request first and by key within one, and each
//   request's sorted keys land in exactly the places its input held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "server/backend/backend.h"
#include "gpusort/kernels/runtime.h"
#include "server/backend/cuda/device_context.h"

namespace gpusort {

// Padding may make a batch's rows at most this many times its keys; beyond it (one long request among
// many short ones) the composite radix sort does less work.
inline constexpr std::size_t kBatchRowsMaxPadding = 4;

// The longest request of a batch: the row length of the row form.
std::size_t BatchRowLength(std::span<const BatchItem> items);
// Whether the row form suits the batch: longest request within one bitonic tile, padding within bounds.
bool BatchFitsRows(std::span<const BatchItem> items);

// The device part of either form, as one GpuJob (gpu_job.h): the batch packed on the host as one
// array of ordered bits goes in, the form's single launch sorts it, and it comes back in place (with
// uint32 positions when asked).
struct PackedBatch {
  std::span<std::byte> keys;             // packed keys, sorted in place
  std::size_t key_bytes = 0;             // per packed key
  std::span<std::uint32_t> positions;    // empty: none wanted
  bool double_buffered = false;          // the launch sorts from buffer 0 into either (a radix sort)
  std::size_t temp_bytes = 0;
};
// Queues the sort on `stream`; sets *result to the buffer (0 or 1) that holds the answer.
using BatchLaunch = std::function<absl::Status(const kernels::Stream& stream, void* const keys[2],
                                               void* const positions[2], void* temp, int* result)>;
// Runs the batch through RunGpuJob, then gives every request its report: the kernel that ran, the
// device, the host's packing time and the batch's stage times.
absl::Status RunPackedBatch(DeviceContext& context, const PackedBatch& batch, const BatchLaunch& launch,
                            std::span<BatchItem> items, Algorithm algorithm, const std::string& device_name,
                            double prepare_seconds);

// The row form. Any dtype, kNone / kIndices; the longest request at most kBitonicRowsMaxLength keys.
absl::Status SortBatchAsRowsOnGpu(DeviceContext& context, const SortSpec& spec, std::span<BatchItem> items,
                                  const std::string& device_name);

// The composite radix form. For 4-byte dtypes and kNone / kIndices only; the caller routes the rest.
absl::Status SortBatchOnGpu(DeviceContext& context, const SortSpec& spec, std::span<BatchItem> items,
                            const std::string& device_name);

}  // namespace gpusort
