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

namespace {

// 8-byte keys move and compare at about half the rate of 4-byte ones; 1- and 2-byte keys are widened
// to 32 bits on both engines' sort paths, so they cost as 4-byte keys.
double WidthFactor(DType dtype) { return ElementSize(dtype) == 8 ? 1.6 : 1.0; }

// Indices or values: a second array through the sort and back.
double PayloadFactor(const SortSpec& spec) { return spec.payload == SortPayload::kNone ? 1.0 : 1.6; }

}  // namespace

EngineCost CpuSortCost(const SortSpec& spec) {
  return {10e-6, 2.3e-9 * WidthFactor(spec.dtype) * PayloadFactor(spec)};
}

EngineCost GpuSortCost(const SortSpec& spec, bool pinned) {
  return {pinned ? 100e-6 : 150e-6, (pinned ? 0.22e-9 : 0.5e-9) * WidthFactor(spec.dtype) * PayloadFactor(spec)};
}

EngineCost CpuTopKCost(const TopKSpec& spec) { return {10e-6, 0.17e-9 * WidthFactor(spec.dtype)}; }

EngineCost GpuTopKCost(const TopKSpec& spec, bool pinned) {
  return {pinned ? 100e-6 : 150e-6, (pinned ? 0.08e-9 : 0.32e-9) * WidthFactor(spec.dtype)};
}

AutoChoice ChooseByLoad(AutoChoice by_size, double cpu_backlog_seconds, const EngineCost& cpu,
                        double gpu_backlog_seconds, const EngineCost& gpu, std::size_t count) {
  if (count < kAutoLoadMinKeys) return AutoChoice::kCpu;
  if (cpu_backlog_seconds <= 0 && gpu_backlog_seconds <= 0) return by_size;
  const double cpu_done = cpu_backlog_seconds + cpu.Seconds(count);
  const double gpu_done = gpu_backlog_seconds + gpu.Seconds(count);
  return gpu_done < cpu_done ? AutoChoice::kGpuRadix : AutoChoice::kCpu;
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
