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
#include <span>
#include <string>

#include "absl/status/status.h"
#include "server/backend/backend.h"
#include "server/backend/cuda/device_context.h"

namespace gpusort {

// Padding may make a batch's rows at most this many times its keys; beyond it (one long request among
// many short ones) the composite radix sort does less work.
inline constexpr std::size_t kBatchRowsMaxPadding = 4;

// The longest request of a batch: the row length of the row form.
std::size_t BatchRowLength(std::span<const BatchItem> items);
// Whether the row form suits the batch: longest request within one bitonic tile, padding within bounds.
bool BatchFitsRows(std::span<const BatchItem> items);

// The stage times of one batch launch, which every request of the batch reports.
struct BatchStageSeconds {
  double prepare = 0, stream_wait = 0, h2d = 0, kernel = 0, d2h = 0;
};
// Fills one request's report: the kernel that ran, the device, and its batch's stage times.
void ReportBatchItem(ExecutionReport& report, Algorithm algorithm, const std::string& device_name,
                     const BatchStageSeconds& seconds);

// The row form. Any dtype, kNone / kIndices; the longest request at most kBitonicRowsMaxLength keys.
absl::Status SortBatchAsRowsOnGpu(DeviceContext& context, const SortSpec& spec, std::span<BatchItem> items,
                                  const std::string& device_name);

// The composite radix form. For 4-byte dtypes and kNone / kIndices only; the caller routes the rest.
absl::Status SortBatchOnGpu(DeviceContext& context, const SortSpec& spec, std::span<BatchItem> items,
                            const std::string& device_name);

}  // namespace gpusort
