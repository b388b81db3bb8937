// RowSort: CUB DeviceSegmentedSort::StableSortPairs over equal-length rows, positions as payload.
#include "gpusort/kernels/segmented_sort.h"

#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "cuda_status.h"

namespace gpusort::kernels {
namespace {

// Row r's keys start at r * row_length; offsets[rows] is the end of the last row.
__global__ void RowOffsetsKernel(std::int64_t* offsets, std::size_t rows, std::size_t row_length) {
  for (std::size_t r = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; r <= rows;
       r += std::size_t{gridDim.x} * blockDim.x) {
    offsets[r] = static_cast<std::int64_t>(r * row_length);
  }
}

// Each key's position within its row.
__global__ void RowPositionsKernel(std::uint32_t* positions, std::size_t count, std::size_t row_length) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    positions[i] = static_cast<std::uint32_t>(i % row_length);
  }
}

unsigned Blocks(std::size_t items, int threads) {
  std::size_t blocks = (items + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks ? blocks : 1) : 65535 * 16);
}

// The offsets live at the front of temp; CUB's own temporary storage follows, 256-byte aligned.
std::size_t OffsetBytes(std::size_t rows) { return ((rows + 1) * sizeof(std::int64_t) + 255) / 256 * 256; }

template <typename Key>
Status RowSortImpl(const RowSortArgs& a, void* temp, std::size_t* temp_bytes, cudaStream_t stream,
                   int* result) {
  const std::size_t count = a.rows * a.row_length;
  if (count > static_cast<std::size_t>(INT_MAX)) {
    return Status(StatusCode::kInvalidArgument, "row sort of more than 2^31-1 keys");
  }
  const bool querying = temp == nullptr;
  auto* offsets = static_cast<std::int64_t*>(temp);
  void* cub_temp = querying ? nullptr : static_cast<char*>(temp) + OffsetBytes(a.rows);
  std::size_t cub_bytes = querying ? 0 : *temp_bytes - OffsetBytes(a.rows);
  cub::DoubleBuffer<Key> keys(static_cast<Key*>(a.keys[0]), static_cast<Key*>(a.keys[1]));
  cub::DoubleBuffer<std::uint32_t> positions(static_cast<std::uint32_t*>(a.indices[0]),
                                             static_cast<std::uint32_t*>(a.indices[1]));
  if (!querying) {
    RowOffsetsKernel<<<Blocks(a.rows + 1, 256), 256, 0, stream>>>(offsets, a.rows, a.row_length);
    GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("row offsets kernel");
    RowPositionsKernel<<<Blocks(count, 256), 256, 0, stream>>>(positions.Current(), count, a.row_length);
    GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("row positions kernel");
  }
  if (count > 1 && a.row_length > 1) {
    GPUSORT_CUDA_RETURN_IF_ERROR(cub::DeviceSegmentedSort::StableSortPairs(
        cub_temp, cub_bytes, keys, positions, static_cast<std::int64_t>(count),
        static_cast<std::int64_t>(a.rows), offsets, offsets + 1, stream));
  }
  if (querying) {
    *temp_bytes = OffsetBytes(a.rows) + cub_bytes;
  } else {
    GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("cub::DeviceSegmentedSort launch");
    if (keys.selector != positions.selector) {
      return Status(StatusCode::kInternal, "segmented sort left keys and positions in different buffers");
    }
    if (result) *result = keys.selector;
  }
  return Status::Ok();
}

Status Dispatch(const RowSortArgs& a, void* temp, std::size_t* temp_bytes, cudaStream_t stream,
                int* result) {
  return a.key_width == KeyWidth::k32 ? RowSortImpl<std::uint32_t>(a, temp, temp_bytes, stream, result)
                                      : RowSortImpl<std::uint64_t>(a, temp, temp_bytes, stream, result);
}

// Each key's position in the whole array.
__global__ void IotaKernel(std::uint32_t* positions, std::size_t count) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    positions[i] = static_cast<std::uint32_t>(i);
  }
}

// Blocks take segments; a block's threads take the segment's keys.
__global__ void SegmentRelativeKernel(std::uint32_t* positions, const std::int64_t* offsets, std::size_t segments) {
  for (std::size_t s = blockIdx.x; s < segments; s += gridDim.x) {
    const auto begin = static_cast<std::size_t>(offsets[s]), end = static_cast<std::size_t>(offsets[s + 1]);
    for (std::size_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      positions[i] -= static_cast<std::uint32_t>(begin);
    }
  }
}

template <typename Key>
Status SegmentSortImpl(const SegmentSortArgs& a, void* temp, std::size_t* temp_bytes, cudaStream_t stream,
                       int* result) {
  if (a.count > static_cast<std::size_t>(INT_MAX)) {
    return Status(StatusCode::kInvalidArgument, "segmented sort of more than 2^31-1 keys");
  }
  const bool querying = temp == nullptr;
  cub::DoubleBuffer<Key> keys(static_cast<Key*>(a.keys[0]), static_cast<Key*>(a.keys[1]));
  cub::DoubleBuffer<std::uint32_t> positions(static_cast<std::uint32_t*>(a.indices[0]),
                                             static_cast<std::uint32_t*>(a.indices[1]));
  std::size_t cub_bytes = querying ? 0 : *temp_bytes;
  if (!querying) {
    IotaKernel<<<Blocks(a.count, 256), 256, 0, stream>>>(positions.Current(), a.count);
    GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("positions kernel");
  }
  if (a.count > 1 && a.segments > 0) {
    // The same offset type as RowSortImpl's (non-const), so that both share one instantiation of CUB's
    // segmented sort (each costs minutes of compile time); CUB only reads the offsets.
    auto* offsets = const_cast<std::int64_t*>(a.offsets);
    GPUSORT_CUDA_RETURN_IF_ERROR(cub::DeviceSegmentedSort::StableSortPairs(
        temp, cub_bytes, keys, positions, static_cast<std::int64_t>(a.count), static_cast<std::int64_t>(a.segments),
        offsets, offsets + 1, stream));
  }
  if (querying) {
    *temp_bytes = std::max<std::size_t>(cub_bytes, 1);
  } else {
    GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("cub::DeviceSegmentedSort launch");
    if (keys.selector != positions.selector) {
      return Status(StatusCode::kInternal, "segmented sort left keys and positions in different buffers");
    }
    if (result) *result = keys.selector;
  }
  return Status::Ok();
}

Status DispatchSegments(const SegmentSortArgs& a, void* temp, std::size_t* temp_bytes, cudaStream_t stream,
                        int* result) {
  return a.key_width == KeyWidth::k32 ? SegmentSortImpl<std::uint32_t>(a, temp, temp_bytes, stream, result)
                                      : SegmentSortImpl<std::uint64_t>(a, temp, temp_bytes, stream, result);
}

}  // namespace

Status SegmentSortTempBytes(const SegmentSortArgs& args, std::size_t* bytes) {
  *bytes = 0;
  return DispatchSegments(args, nullptr, bytes, nullptr, nullptr);
}

Status SegmentSort(const SegmentSortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream,
                   int* result) {
  if (temp == nullptr) return Status(StatusCode::kInvalidArgument, "segmented sort without temporary storage");
  return DispatchSegments(args, temp, &temp_bytes, Native(stream), result);
}

Status SegmentRelativePositionsAsync(std::uint32_t* positions, const std::int64_t* offsets, std::size_t segments,
                                     const Stream& stream) {
  if (segments == 0) return Status::Ok();
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>(segments, 65535 * 16));
  SegmentRelativeKernel<<<blocks, 128, 0, Native(stream)>>>(positions, offsets, segments);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("segment positions kernel");
  return Status::Ok();
}

Status RowSortTempBytes(const RowSortArgs& args, std::size_t* bytes) {
  *bytes = 0;
  return Dispatch(args, nullptr, bytes, nullptr, nullptr);
}

Status RowSort(const RowSortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream,
               int* result) {
  if (temp == nullptr) return Status(StatusCode::kInvalidArgument, "row sort without temporary storage");
  return Dispatch(args, temp, &temp_bytes, Native(stream), result);
}

}  // namespace gpusort::kernels
