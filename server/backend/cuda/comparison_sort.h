// The comparison sorts a caller can name (MERGE, BITONIC, ODD_EVEN, QUICKSORT) on keys already on the
// device as ordered bits: one entry point, so that SortJob (sort_job.h) treats them all alike. Each sorts in place,
// with positions when the request needs them (indices, or values gathered by position afterwards).
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/runtime.h"
#include "server/core/spec.h"

namespace gpusort {

bool IsComparisonSort(Algorithm algorithm);

// INVALID_ARGUMENT when `algorithm` cannot sort `count` keys (ODD_EVEN's size limit), before any work.
absl::Status CheckComparisonSortSize(Algorithm algorithm, std::size_t count);

// Device temporary bytes the algorithm needs.
absl::Status ComparisonSortTempBytes(Algorithm algorithm, kernels::KeyWidth width, std::size_t count,
                                     bool with_positions, std::size_t* bytes);

// Sorts `count` ordered-bit keys at `keys` (and writes and moves positions when `positions` is set).
absl::Status ComparisonSort(Algorithm algorithm, kernels::KeyWidth width, std::size_t count, void* keys,
                            std::uint32_t* positions, void* temp, std::size_t temp_bytes,
                            const kernels::Stream& stream);

}  // namespace gpusort
