// RowSort: CUB DeviceSegmentedSort::StableSortPairs over equal-length rows, positions as payload.
// SegmentSort: segments of up to 4096 keys as bitonic tiles (bitonic_network.cuh), one launch per tile
// size, the longer ones by CUB's segmented sort.
#include "gpusort/kernels/segmented_sort.h"

#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "bitonic_tiles.h"
#include "cuda_status.h"
#include "gpusort/kernels/comparison_sorts.h"

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
  GPUSORT_KERNELS_RETURN_IF_ERROR(RefuseKeyWidth16(a.key_width, "row sort"));
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

std::size_t Aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// Segment s's tile class: the smallest power of two 2^c (c = 1..12) that holds it; 0 for an empty one,
// kLongClass for one longer than max_tile_length (CUB's).
constexpr int kLongClass = kMaxTileClass + 1;
__host__ __device__ inline int TileClass(std::uint64_t length, std::uint64_t max_tile_length) {
  if (length == 0) return 0;
  if (length > max_tile_length) return kLongClass;
  if (length <= 2) return 1;
  // ceil(log2(length)) = the bit width of length - 1 (length >= 3 here).
#ifdef __CUDA_ARCH__
  return 64 - __clzll(static_cast<long long>(length - 1));
#else
  return 64 - __builtin_clzll(length - 1);
#endif
}

// Where each class's segments begin in the tile list, by value (the host counted them).
struct ClassStarts {
  std::uint32_t first[kMaxTileClass + 1];
};

// Writes each segment's id into its class's part of the tile list (in no particular order within a
// class: each tile is sorted on its own), and the long segments' begins and ends for CUB.
__global__ void BucketSegmentsKernel(const std::int64_t* offsets, std::size_t segments, std::uint64_t max_tile_length,
                                     ClassStarts starts, unsigned* cursors, std::uint32_t* tile_segments,
                                     std::int64_t* long_begin, std::int64_t* long_end) {
  for (std::size_t s = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; s < segments;
       s += std::size_t{gridDim.x} * blockDim.x) {
    const std::int64_t begin = offsets[s], end = offsets[s + 1];
    const int c = TileClass(static_cast<std::uint64_t>(end - begin), max_tile_length);
    if (c == 0) continue;
    const unsigned slot = atomicAdd(&cursors[c], 1u);
    if (c == kLongClass) {
      long_begin[slot] = begin;
      long_end[slot] = end;
    } else {
      tile_segments[starts.first[c] + slot] = static_cast<std::uint32_t>(s);
    }
  }
}

// Temporary storage: the cursors, the tile list, the long begins and ends, then CUB's.
struct SegmentTemp {
  std::size_t cursors, ids, begins, ends, cub;
  std::size_t Fixed() const { return cursors + ids + begins + ends; }
};

SegmentTemp LayoutOf(const SegmentSortPlan& plan) {
  return {Aligned((kLongClass + 1) * sizeof(unsigned)), Aligned(plan.tile_segments * sizeof(std::uint32_t)),
          Aligned(plan.long_segments * sizeof(std::int64_t)), Aligned(plan.long_segments * sizeof(std::int64_t)), 0};
}

template <typename Key>
Status SegmentSortImpl(const SegmentSortArgs& a, void* temp, std::size_t* temp_bytes, cudaStream_t stream,
                       int* result) {
  if (a.count > static_cast<std::size_t>(INT_MAX)) {
    return Status(StatusCode::kInvalidArgument, "segmented sort of more than 2^31-1 keys");
  }
  if (a.plan == nullptr || a.plan->segments != a.segments || a.plan->count != a.count) {
    return Status(StatusCode::kInvalidArgument, "segmented sort without its plan (PlanSegmentSort)");
  }
  const SegmentSortPlan& plan = *a.plan;
  const bool querying = temp == nullptr;
  SegmentTemp layout = LayoutOf(plan);
  char* base = static_cast<char*>(temp);
  auto* cursors = reinterpret_cast<unsigned*>(base);
  auto* ids = reinterpret_cast<std::uint32_t*>(base + layout.cursors);
  auto* long_begin = reinterpret_cast<std::int64_t*>(base + layout.cursors + layout.ids);
  auto* long_end = reinterpret_cast<std::int64_t*>(base + layout.cursors + layout.ids + layout.begins);
  void* cub_temp = querying ? nullptr : base + layout.Fixed();
  if (!querying) {
    if (*temp_bytes < layout.Fixed()) {
      return Status(StatusCode::kInvalidArgument, "segmented sort with too little temporary storage");
    }
    layout.cub = *temp_bytes - layout.Fixed();
    ClassStarts starts{};
    for (int c = 1; c <= kMaxTileClass; ++c) starts.first[c] = static_cast<std::uint32_t>(plan.first[c]);
    GPUSORT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(cursors, 0, layout.cursors, stream));
    if (a.segments > 0) {
      BucketSegmentsKernel<<<Blocks(a.segments, 256), 256, 0, stream>>>(a.offsets, a.segments, plan.max_tile_length,
                                                                       starts, cursors, ids, long_begin, long_end);
      GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("segment buckets kernel");
    }
    for (int c = 1; c <= kMaxTileClass; ++c) {
      if (plan.tiles[c] == 0) continue;
      bitonic::TileJob job;
      job.tiles = plan.tiles[c];
      job.row_positions = false;  // positions in the whole array, as CUB's part below
      job.segment_offsets = a.offsets;
      job.segment_ids = ids + plan.first[c];
      GPUSORT_KERNELS_RETURN_IF_ERROR(bitonic::LaunchTiles(sizeof(Key) == 4 ? KeyWidth::k32 : KeyWidth::k64, c,
                                                           false, a.keys[0], nullptr, a.keys[1],
                                                           static_cast<std::uint32_t*>(a.indices[1]), job, stream));
    }
  }
  if (plan.long_segments > 0) {
    if (!querying) {
      IotaKernel<<<Blocks(a.count, 256), 256, 0, stream>>>(static_cast<std::uint32_t*>(a.indices[0]), a.count);
      GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("positions kernel");
    }
    // The same iterator types as RowSortImpl's (non-const int64*), so that both share one
    // instantiation of CUB's segmented sort (each costs minutes of compile time).
    GPUSORT_CUDA_RETURN_IF_ERROR(cub::DeviceSegmentedSort::StableSortPairs(
        cub_temp, layout.cub, static_cast<const Key*>(a.keys[0]), static_cast<Key*>(a.keys[1]),
        static_cast<const std::uint32_t*>(a.indices[0]), static_cast<std::uint32_t*>(a.indices[1]),
        static_cast<std::int64_t>(a.count), static_cast<std::int64_t>(plan.long_segments), long_begin, long_end,
        stream));
    if (!querying) GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("cub::DeviceSegmentedSort launch");
  }
  if (querying) {
    *temp_bytes = layout.Fixed() + layout.cub;
  } else if (result) {
    *result = 1;
  }
  return Status::Ok();
}

Status DispatchSegments(const SegmentSortArgs& a, void* temp, std::size_t* temp_bytes, cudaStream_t stream,
                        int* result) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(RefuseKeyWidth16(a.key_width, "segmented sort"));
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

Status PlanSegmentSort(const std::uint64_t* host_offsets, std::size_t segments, std::size_t max_tile_length,
                       SegmentSortPlan* plan) {
  if (max_tile_length > kBitonicRowsMaxLength) {
    return Status(StatusCode::kInvalidArgument, "segmented sort with tiles over 4096 keys");
  }
  *plan = SegmentSortPlan{};
  plan->segments = segments;
  plan->max_tile_length = max_tile_length;
  if (host_offsets == nullptr) return Status(StatusCode::kInvalidArgument, "segmented sort without offsets");
  plan->count = static_cast<std::size_t>(host_offsets[segments]);
  if (segments > static_cast<std::size_t>(UINT32_MAX)) {
    return Status(StatusCode::kInvalidArgument, "segmented sort of more than 2^32-1 segments");
  }
  for (std::size_t s = 0; s < segments; ++s) {
    const int c = TileClass(host_offsets[s + 1] - host_offsets[s], max_tile_length);
    if (c == kLongClass) {
      ++plan->long_segments;
    } else if (c > 0) {
      ++plan->tiles[c];
    }
  }
  std::size_t next = 0;
  for (int c = 1; c <= kMaxTileClass; ++c) {
    plan->first[c] = next;
    next += plan->tiles[c];
  }
  plan->tile_segments = next;
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
