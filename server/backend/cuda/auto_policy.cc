#include "server/backend/cuda/auto_policy.h"

#include "server/core/dtype.h"

namespace gpusort {

AutoChoice ChooseSort(const SortSpec& spec, std::size_t count) {
  return count * ElementSize(spec.dtype) < kAutoCpuBelowBytes ? AutoChoice::kCpu : AutoChoice::kGpuRadix;
}

AutoChoice ChooseTopK(const TopKSpec& spec, std::size_t count) {
  return count * ElementSize(spec.dtype) < kAutoCpuBelowBytes ? AutoChoice::kCpu : AutoChoice::kGpuRadix;
}

}  // namespace gpusort
