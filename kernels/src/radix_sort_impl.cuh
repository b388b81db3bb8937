// One radix sort template for both key widths; radix_sort_u32.cu and radix_sort_u64.cu instantiate it
// (one CUB instantiation family per file keeps each nvcc run short).
#pragma once

#include <cub/device/device_radix_sort.cuh>

#include <climits>
#include <cstddef>
#include <cstdint>

#include "cuda_status.h"
#include "gpusort/kernels/radix_sort.h"
#include "iota.cuh"

namespace gpusort::kernels::internal {

// 32-bit keys alone, sorted with the launch tuning CUB picks for float keys. On Hopper CUB's onesweep
// pass takes 19 keys per thread for float and 20 for other 4-byte keys (tuning_radix_sort.cuh,
// FLOAT_KEYS); measured on the H100 (BENCHMARKS.md) the float tuning sorts 256M keys ~10% faster, and our
// keys are unsigned bits whatever the dtype, so they take it too. The policy only sizes the launch:
// keys are still compared as uint32 bits. This reaches into CUB's dispatch layer (CCCL 3.0, CUDA 13.0);
// a CCCL upgrade must re-check it (kernel_bench compares it with a plain CUB call every run).
inline cudaError_t SortKeys32WithFloatTuning(void* temp, std::size_t* temp_bytes,
                                             cub::DoubleBuffer<std::uint32_t>& keys, int n, int begin_bit,
                                             int end_bit, bool overwrite, cudaStream_t stream) {
  using Offset = std::uint32_t;
  using FloatTunedHub = cub::detail::radix::policy_hub<float, cub::NullType, Offset>;
  using Dispatch = cub::DispatchRadixSort<cub::SortOrder::Ascending, std::uint32_t, cub::NullType, Offset,
                                          cub::detail::identity_decomposer_t, FloatTunedHub>;
  cub::DoubleBuffer<cub::NullType> no_values;
  return Dispatch::Dispatch(temp, *temp_bytes, keys, no_values, static_cast<Offset>(n), begin_bit, end_bit,
                            /*is_overwrite_okay=*/overwrite, stream);
}

// temp == nullptr: only sets *temp_bytes.
template <typename Key>
Status RadixSortImpl(const RadixSortArgs& a, void* temp, std::size_t* temp_bytes, cudaStream_t stream,
                     int* result) {
  constexpr int kBits = sizeof(Key) * 8;
  if (a.count > static_cast<std::size_t>(INT_MAX)) {
    return Status(StatusCode::kInvalidArgument, "radix sort of more than 2^31-1 keys");
  }
  if (a.begin_bit < 0 || a.end_bit > kBits || a.begin_bit > a.end_bit) {
    return Status(StatusCode::kInvalidArgument, "radix sort bit range outside the key");
  }
  if (a.keep_input && a.payload != Payload::kNone) {
    return Status(StatusCode::kInvalidArgument, "radix sort: keep_input sorts keys alone");
  }
  const int n = static_cast<int>(a.count);
  const bool querying = temp == nullptr;
  if (!querying && a.payload == Payload::kIndexU32) {
    GPUSORT_KERNELS_RETURN_IF_ERROR(IotaAsync(static_cast<std::uint32_t*>(a.values[0]), a.count, stream));
  }
  if (a.count <= 1 || a.begin_bit == a.end_bit) {  // nothing varies: the input is the answer
    if (querying) *temp_bytes = 0;
    if (!querying && a.keep_input && a.count > 0) {
      GPUSORT_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(a.keys[1], a.keys[0], a.count * sizeof(Key), cudaMemcpyDeviceToDevice, stream));
    }
    if (result) *result = a.keep_input ? 1 : 0;
    return Status::Ok();
  }
  cub::DoubleBuffer<Key> keys(static_cast<Key*>(a.keys[0]), static_cast<Key*>(a.keys[1]));
  cudaError_t error = cudaSuccess;
  auto sort_pairs = [&](auto* value_type_tag) {
    using Value = std::remove_pointer_t<decltype(value_type_tag)>;
    cub::DoubleBuffer<Value> values(static_cast<Value*>(a.values[0]), static_cast<Value*>(a.values[1]));
    error = cub::DeviceRadixSort::SortPairs(temp, *temp_bytes, keys, values, n, a.begin_bit, a.end_bit,
                                            stream);
    if (error == cudaSuccess && !querying && values.selector != keys.selector) {
      error = cudaErrorUnknown;  // CUB moves keys and values together; a split would be a CUB bug
    }
  };
  switch (a.payload) {
    case Payload::kNone:
      if constexpr (sizeof(Key) == 4) {
        error = SortKeys32WithFloatTuning(temp, temp_bytes, keys, n, a.begin_bit, a.end_bit, !a.keep_input, stream);
      } else if (a.keep_input) {  // CUB's own scratch in temp; keys[0] only read
        error = cub::DeviceRadixSort::SortKeys(temp, *temp_bytes, static_cast<const Key*>(a.keys[0]),
                                               static_cast<Key*>(a.keys[1]), n, a.begin_bit, a.end_bit, stream);
      } else {
        error = cub::DeviceRadixSort::SortKeys(temp, *temp_bytes, keys, n, a.begin_bit, a.end_bit, stream);
      }
      break;
    case Payload::kU32:
    case Payload::kIndexU32:
      sort_pairs(static_cast<std::uint32_t*>(nullptr));
      break;
    case Payload::kU64:
      sort_pairs(static_cast<std::uint64_t*>(nullptr));
      break;
  }
  GPUSORT_KERNELS_RETURN_IF_ERROR(FromCuda(error, "cub::DeviceRadixSort"));
  if (!querying) {
    GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("cub::DeviceRadixSort launch");
    if (a.keep_input) {
      // Without overwriting, CUB may end in its own scratch: the answer is promised in keys[1].
      if (sizeof(Key) == 4 && keys.Current() != a.keys[1]) {
        GPUSORT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(a.keys[1], keys.Current(), a.count * sizeof(Key),
                                                     cudaMemcpyDeviceToDevice, stream));
      }
      if (result) *result = 1;
    } else if (result) {
      *result = keys.selector;
    }
  }
  return Status::Ok();
}

Status RadixSort32(const RadixSortArgs& a, void* temp, std::size_t* temp_bytes, cudaStream_t stream,
                   int* result);
Status RadixSort64(const RadixSortArgs& a, void* temp, std::size_t* temp_bytes, cudaStream_t stream,
                   int* result);

}  // namespace gpusort::kernels::internal
