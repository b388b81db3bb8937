// RowSort: CUB DeviceSegmentedSort::StableSortPairs over equal-length rows, positions as payload.
#include "gpusort/kernels/segmented_sort.h"

#include <cub/device/device_segmented_sort.cuh>

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

}  // namespace

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
