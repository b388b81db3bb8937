#include "server/backend/auto_policy.h"

#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/top_k.h"

namespace gpusort {

AutoChoice ChooseSort(const SortSpec&, std::size_t count) {
  return count < kAutoSortCpuBelowKeys ? AutoChoice::kCpu : AutoChoice::kGpuRadix;
}

AutoChoice ChooseTopK(const TopKSpec& spec, std::size_t count) {
  if (count < kAutoTopKCpuBelowKeys || spec.k <= kAutoTopKCpuUpToK) return AutoChoice::kCpu;
  return AutoChoice::kGpuRadix;
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
