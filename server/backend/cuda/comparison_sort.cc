#include "server/backend/cuda/comparison_sort.h"

#include <string>

#include "gpusort/kernels/comparison_sorts.h"
#include "server/backend/cuda/kernel_status.h"

namespace gpusort {
namespace {

using TempFn = kernels::Status (*)(const kernels::KeySortArgs&, std::size_t*);
using SortFn = kernels::Status (*)(const kernels::KeySortArgs&, void*, std::size_t, const kernels::Stream&);

struct Kernel {
  TempFn temp_bytes;
  SortFn sort;
};

Kernel KernelFor(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kMerge: return {kernels::MergeSortTempBytes, kernels::MergeSort};
    case Algorithm::kBitonic: return {kernels::BitonicSortTempBytes, kernels::BitonicSort};
    case Algorithm::kOddEven: return {kernels::OddEvenSortTempBytes, kernels::OddEvenSort};
    case Algorithm::kQuicksort: return {kernels::QuicksortTempBytes, kernels::Quicksort};
    default: return {nullptr, nullptr};
  }
}

kernels::KeySortArgs Args(kernels::KeyWidth width, std::size_t count, void* keys, std::uint32_t* positions) {
  kernels::KeySortArgs args;
  args.key_width = width;
  args.count = count;
  args.keys = keys;
  args.positions = positions;
  return args;
}

}  // namespace

bool IsComparisonSort(Algorithm algorithm) { return KernelFor(algorithm).sort != nullptr; }

absl::Status CheckComparisonSortSize(Algorithm algorithm, std::size_t count) {
  if (algorithm == Algorithm::kOddEven && count > kernels::kOddEvenMaxKeys) {
    return absl::InvalidArgumentError(
        "odd_even sorts at most " + std::to_string(kernels::kOddEvenMaxKeys) + " keys (it is O(n^2) work in one "
        "block); this request has " + std::to_string(count) + ": use auto, radix or merge");
  }
  return absl::OkStatus();
}

absl::Status ComparisonSortTempBytes(Algorithm algorithm, kernels::KeyWidth width, std::size_t count,
                                     bool with_positions, std::size_t* bytes) {
  const Kernel kernel = KernelFor(algorithm);
  if (kernel.temp_bytes == nullptr) return absl::InternalError("not a comparison sort");
  // Sizes depend only on width, count and whether positions are set; markers stand in for the buffers
  // (never touched) so that a kernel's own argument checks pass.
  static std::uint64_t key_marker;
  static std::uint32_t position_marker;
  GPUSORT_RETURN_IF_KERNEL_ERROR(
      kernel.temp_bytes(Args(width, count, &key_marker, with_positions ? &position_marker : nullptr), bytes),
      "sizing the sort");
  return absl::OkStatus();
}

absl::Status ComparisonSort(Algorithm algorithm, kernels::KeyWidth width, std::size_t count, void* keys,
                            std::uint32_t* positions, void* temp, std::size_t temp_bytes,
                            const kernels::Stream& stream) {
  const Kernel kernel = KernelFor(algorithm);
  if (kernel.sort == nullptr) return absl::InternalError("not a comparison sort");
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernel.sort(Args(width, count, keys, positions), temp, temp_bytes, stream),
                                 AlgorithmName(algorithm));
  return absl::OkStatus();
}

}  // namespace gpusort
