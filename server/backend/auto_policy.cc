#include "server/backend/auto_policy.h"

#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/top_k.h"
#include "server/core/dtype.h"

namespace gpusort {

AutoChoice ChooseSort(const SortSpec&, std::size_t count) {
  return count < kAutoSortCpuBelowKeys ? AutoChoice::kCpu : AutoChoice::kGpuRadix;
}

AutoChoice ChooseTopK(const TopKSpec& spec, std::size_t count, bool pinned) {
  if (pinned && count >= kAutoPinnedTopKGpuFromKeys) return AutoChoice::kGpuRadix;
  if (count < kAutoTopKCpuBelowKeys || spec.k <= kAutoTopKCpuUpToK) return AutoChoice::kCpu;
  return AutoChoice::kGpuRadix;
}

std::optional<AutoRouting> ParseAutoRouting(std::string_view name) {
  if (name == "size") return AutoRouting::kSize;
  if (name == "load") return AutoRouting::kLoad;
  if (name == "gpu") return AutoRouting::kGpu;
  return std::nullopt;
}

std::string_view AutoRoutingName(AutoRouting routing) {
  switch (routing) {
    case AutoRouting::kSize: return "size";
    case AutoRouting::kLoad: return "load";
    case AutoRouting::kGpu: return "gpu";
  }
  return "?";
}

std::size_t SortGpuFromKeysUnderLoad(int others_in_flight) {
  for (const SortLoadStep& step : kAutoSortLoadSteps)
    if (others_in_flight < step.others_in_flight_below) return step.gpu_from_keys;
  return kAutoSortLoadSteps[std::size(kAutoSortLoadSteps) - 1].gpu_from_keys;
}

// Rows and segments of up to 4096 keys sort as bitonic tiles; longer ones by CUB's segmented radix sort.
// Segments mix the two in one sort (kernels::SegmentSort): the report then names RADIX when any segment
// was too long for a tile. Measured: segment_sort_bench in BENCHMARKS.md ("Segments").
Algorithm ChooseRowSortKernel(const SortSpec& spec, std::size_t count) {
  return spec.LongestSegment(count) <= kernels::kBitonicRowsMaxLength ? Algorithm::kBitonic : Algorithm::kRadix;
}

Algorithm ChooseTopKKernel(const TopKSpec& spec, std::size_t count) {
  if (spec.by_segments()) return Algorithm::kRadix;  // the selection kernels take rows of equal length
  const std::size_t row_length = count / spec.rows;
  // One row: radix select, which reads it once (16-bit keys at their own width, their many equals
  // capped as they are read; BENCHMARKS.md, "16-bit top-k").
  if (spec.rows == 1) return Algorithm::kRadixSelect;
  if (spec.k <= kernels::kSmallTopKMaxK) return Algorithm::kSmallK;
  return row_length <= kernels::kBitonicRowsMaxLength ? Algorithm::kBitonic : Algorithm::kRadix;
}

}  // namespace gpusort
