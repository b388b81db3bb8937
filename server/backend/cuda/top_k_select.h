// The TopK selection kernels (kernels/top_k.h: RADIX_SELECT, SMALL_K, THREAD_LISTS) as the engine
// knows them: which algorithms they are, their entry points and their limits. TopKSelectJob
// (top_k_jobs.h) runs them.
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "gpusort/kernels/top_k.h"
#include "server/core/spec.h"

namespace gpusort {

bool IsTopKSelection(Algorithm algorithm);

// INVALID_ARGUMENT naming the limit when `k` is more than `algorithm` can select per row.
absl::Status CheckTopKSelectionLimits(Algorithm algorithm, std::size_t k);
// INVALID_ARGUMENT when a selection kernel is asked for segments: they select in rows of equal length,
// and segments go by their segmented sort (TopKBySortJob).
absl::Status CheckTopKSegments(const TopKSpec& spec, Algorithm algorithm);

// One selection kernel's entry points and its most k per row (0: any k).
struct TopKSelection {
  kernels::Status (*temp_bytes)(const kernels::TopKArgs&, std::size_t*);
  kernels::Status (*select)(const kernels::TopKArgs&, void*, std::size_t, const kernels::Stream&);
  std::size_t max_k;
};
TopKSelection SelectionOf(Algorithm algorithm);  // RADIX_SELECT for anything not a selection kernel

}  // namespace gpusort
