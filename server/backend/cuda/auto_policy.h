// AUTO's choices for the CUDA backend, in one place. Each threshold is justified by a measurement in
// BENCHMARKS.md ("AUTO: where the CPU wins"); change them only with a new measurement.
#pragma once

#include <cstddef>

#include "server/core/spec.h"

namespace gpusort {

// Below this many key bytes a request costs less on the CPU than a round trip over PCIe plus kernel
// launches. Provisional until measured on the H100 (BENCHMARKS.md).
inline constexpr std::size_t kAutoCpuBelowBytes = std::size_t{64} << 10;

enum class AutoChoice { kCpu, kGpuRadix };

AutoChoice ChooseSort(const SortSpec& spec, std::size_t count);
AutoChoice ChooseTopK(const TopKSpec& spec, std::size_t count);

}  // namespace gpusort
