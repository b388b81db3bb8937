// AUTO's choices, in one place: the engine (the router, auto_router.h, sends small work to the CPU
// engine) and, on the GPU engine, the top-k kernel. Each threshold comes from
// bench/backend_crossover_bench on the H100 machine (16 host cores), BENCHMARKS.md "AUTO: where the CPU
// wins": the CUDA backend's whole call (staging, PCIe both ways, kernels) beside the CPU backend's.
// Change them only with a new measurement.
#pragma once

#include <cstddef>

#include "server/core/spec.h"

namespace gpusort {

// Sort: below this many keys the CPU answers first. Measured 2026-11-22: at 8192 keys the CPU took
// 0.56-0.64x the GPU's time (u32, f32, argsort; u64 1.04x), at 16384 the GPU took 0.53-0.97x the CPU's.
inline constexpr std::size_t kAutoSortCpuBelowKeys = 16384;

// TopK: the CPU's selection reads the keys once at host memory speed, which the GPU cannot beat when
// the keys must first cross PCIe: for k = 100 the CPU won at every size measured (256 to 64M keys, by
// about 2x at 64M). For large k the GPU's sort wins from 16384 keys (k = n/8: 1.2x at 16K, 84x at 16M).
// k between 128 and n/8 was not measured; such requests go to the GPU.
inline constexpr std::size_t kAutoTopKCpuBelowKeys = 16384;
inline constexpr std::size_t kAutoTopKCpuUpToK = 128;

enum class AutoChoice { kCpu, kGpuRadix };

AutoChoice ChooseSort(const SortSpec& spec, std::size_t count);
AutoChoice ChooseTopK(const TopKSpec& spec, std::size_t count);

// The GPU kernel for a Sort of several rows (SortSpec::rows): BITONIC for rows of up to 4096 keys (one
// block per row, in registers and shared memory), else RADIX (CUB's segmented sort). Measured for the
// row kernels themselves (BENCHMARKS.md "Many rows at once", issue 6): bitonic rows 0.170 ms for
// 65536 x 256 u32 against CUB DeviceSegmentedSort's 5.07 ms, 0.234 against 1.34 ms for 16384 x 1024;
// bitonic rows stop at 4096 keys. The crossover through the whole Sort path was not measured.
Algorithm ChooseRowSortKernel(const SortSpec& spec, std::size_t count);

// The GPU kernel for a TopK that ChooseTopK sent to the GPU: RADIX_SELECT (one row), SMALL_K (rows with
// k <= 1024, and one row of 16-bit keys, which it selects at their own width), BITONIC (sorting rows of
// up to 4096 keys) or RADIX (CUB's sort, segmented for rows).
Algorithm ChooseTopKKernel(const TopKSpec& spec, std::size_t count);

}  // namespace gpusort
