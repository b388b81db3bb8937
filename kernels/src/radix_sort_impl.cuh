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
  const int n = static_cast<int>(a.count);
  const bool querying = temp == nullptr;
  if (!querying && a.payload == Payload::kIndexU32) {
    GPUSORT_KERNELS_RETURN_IF_ERROR(IotaAsync(static_cast<std::uint32_t*>(a.values[0]), a.count, stream));
  }
  if (a.count <= 1 || a.begin_bit == a.end_bit) {  // nothing varies: the input is the answer
    if (querying) *temp_bytes = 0;
    if (result) *result = 0;
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
      error = cub::DeviceRadixSort::SortKeys(temp, *temp_bytes, keys, n, a.begin_bit, a.end_bit, stream);
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
    if (result) *result = keys.selector;
  }
  return Status::Ok();
}

Status RadixSort32(const RadixSortArgs& a, void* temp, std::size_t* temp_bytes, cudaStream_t stream,
                   int* result);
Status RadixSort64(const RadixSortArgs& a, void* temp, std::size_t* temp_bytes, cudaStream_t stream,
                   int* result);

}  // namespace gpusort::kernels::internal
