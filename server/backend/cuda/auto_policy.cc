#include "server/backend/cuda/auto_policy.h"

namespace gpusort {

AutoChoice ChooseSort(const SortSpec&, std::size_t count) {
  return count < kAutoSortCpuBelowKeys ? AutoChoice::kCpu : AutoChoice::kGpuRadix;
}

AutoChoice ChooseTopK(const TopKSpec& spec, std::size_t count) {
  if (count < kAutoTopKCpuBelowKeys || spec.k <= kAutoTopKCpuUpToK) return AutoChoice::kCpu;
  return AutoChoice::kGpuRadix;
}

}  // namespace gpusort
