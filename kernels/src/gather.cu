// GatherAsync and TakeRowPrefixesAsync: plain grid-stride kernels, memory bound.
#include "gpusort/kernels/gather.h"

#include <algorithm>
#include <cstdint>

#include "cuda_status.h"

namespace gpusort::kernels {
namespace {

unsigned Blocks(std::size_t items, int threads) {
  std::size_t blocks = (items + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks ? blocks : 1) : 65535 * 16);
}

// Whole elements of a power-of-two width move as one word.
template <typename Word>
__global__ void GatherWordsKernel(const Word* in, const std::uint32_t* order, Word* out, std::size_t count) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = in[order[i]];
  }
}

// Any other width: one thread per output byte, so that a warp's stores stay contiguous.
__global__ void GatherBytesKernel(const unsigned char* in, const std::uint32_t* order, unsigned char* out,
                                  std::size_t count, std::size_t width) {
  const std::size_t total = count * width;
  for (std::size_t b = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; b < total;
       b += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t i = b / width, byte = b - i * width;
    out[b] = in[std::size_t{order[i]} * width + byte];
  }
}

__global__ void OffsetRowPositionsKernel(std::uint32_t* positions, std::size_t count, std::size_t row_length) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    positions[i] += static_cast<std::uint32_t>(i / row_length * row_length);
  }
}

template <typename Key>
__global__ void TakeRowPrefixesKernel(const Key* keys, const std::uint32_t* positions, std::size_t rows,
                                      std::size_t row_length, std::size_t k, Key* out_keys,
                                      std::int64_t* out_positions) {
  const std::size_t total = rows * k;
  for (std::size_t o = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; o < total;
       o += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t r = o / k, j = o - r * k, from = r * row_length + j;
    if (out_keys) out_keys[o] = keys[from];
    if (out_positions) out_positions[o] = positions[from];
  }
}

// Blocks take segments; a block's threads take the segment's results.
template <typename Key>
__global__ void TakeSegmentPrefixesKernel(const Key* keys, const std::uint32_t* positions,
                                          const std::int64_t* offsets, const std::int64_t* result_offsets,
                                          std::size_t segments, Key* out_keys, std::int64_t* out_positions) {
  for (std::size_t s = blockIdx.x; s < segments; s += gridDim.x) {
    const std::int64_t begin = offsets[s], first = result_offsets[s], last = result_offsets[s + 1];
    for (std::int64_t o = first + threadIdx.x; o < last; o += blockDim.x) {
      const std::int64_t from = begin + (o - first);
      if (out_keys) out_keys[o] = keys[from];
      if (out_positions) out_positions[o] = static_cast<std::int64_t>(positions[from]) - begin;
    }
  }
}

template <typename Word>
bool IsAligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % alignof(Word) == 0;
}

template <typename Word>
Status GatherWords(const void* in, const std::uint32_t* order, void* out, std::size_t count,
                   cudaStream_t stream) {
  GatherWordsKernel<Word><<<Blocks(count, 256), 256, 0, stream>>>(static_cast<const Word*>(in), order,
                                                                   static_cast<Word*>(out), count);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("gather kernel");
  return Status::Ok();
}

// Blocks along y take pieces; along x, a grid stride over the piece.
__global__ void WidenPiecePositionsKernel(const std::uint32_t* local, PieceBases pieces, std::int64_t* out) {
  const int j = blockIdx.y;
  const std::uint64_t end = pieces.begin[j + 1];
  const std::int64_t base = pieces.base[j];
  for (std::uint64_t i = pieces.begin[j] + blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < end;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    out[i] = base + local[i];
  }
}

}  // namespace

Status WidenPiecePositionsAsync(const std::uint32_t* local, const PieceBases& pieces, std::int64_t* out,
                                const Stream& stream) {
  if (pieces.count < 0 || pieces.count > kMaxPieces) {
    return Status(StatusCode::kInvalidArgument, "WidenPiecePositionsAsync: more pieces than it takes");
  }
  if (pieces.count == 0) return Status::Ok();
  std::uint64_t longest = 0;
  for (int j = 0; j < pieces.count; ++j) longest = std::max(longest, pieces.begin[j + 1] - pieces.begin[j]);
  const dim3 grid(std::min(Blocks(longest, 256), 1024u), static_cast<unsigned>(pieces.count));
  WidenPiecePositionsKernel<<<grid, 256, 0, Native(stream)>>>(local, pieces, out);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("piece positions kernel");
  return Status::Ok();
}

Status GatherAsync(const void* in, const std::uint32_t* order, void* out, std::size_t count,
                   std::size_t width, const Stream& stream) {
  if (count == 0) return Status::Ok();
  cudaStream_t s = Native(stream);
  const bool aligned16 = IsAligned<uint4>(in) && IsAligned<uint4>(out);
  const bool aligned8 = IsAligned<std::uint64_t>(in) && IsAligned<std::uint64_t>(out);
  switch (width) {
    case 1: return GatherWords<std::uint8_t>(in, order, out, count, s);
    case 2: return GatherWords<std::uint16_t>(in, order, out, count, s);
    case 4: return GatherWords<std::uint32_t>(in, order, out, count, s);
    case 8: if (aligned8) return GatherWords<std::uint64_t>(in, order, out, count, s); break;
    case 16: if (aligned16) return GatherWords<uint4>(in, order, out, count, s); break;
    default: break;
  }
  GatherBytesKernel<<<Blocks(count * width, 256), 256, 0, s>>>(static_cast<const unsigned char*>(in), order,
                                                               static_cast<unsigned char*>(out), count, width);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("gather kernel");
  return Status::Ok();
}

Status OffsetRowPositionsAsync(std::uint32_t* positions, std::size_t rows, std::size_t row_length,
                               const Stream& stream) {
  const std::size_t count = rows * row_length;
  if (count == 0) return Status::Ok();
  OffsetRowPositionsKernel<<<Blocks(count, 256), 256, 0, Native(stream)>>>(positions, count, row_length);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("row positions kernel");
  return Status::Ok();
}

Status TakeRowPrefixesAsync(KeyWidth key_width, const void* keys, const std::uint32_t* positions,
                            std::size_t rows, std::size_t row_length, std::size_t k, void* out_keys,
                            std::int64_t* out_positions, const Stream& stream) {
  if (rows * k == 0) return Status::Ok();
  if (k > row_length) return Status(StatusCode::kInvalidArgument, "k larger than the row");
  cudaStream_t s = Native(stream);
  const unsigned blocks = Blocks(rows * k, 256);
  if (key_width == KeyWidth::k32) {
    TakeRowPrefixesKernel<<<blocks, 256, 0, s>>>(static_cast<const std::uint32_t*>(keys), positions, rows,
                                                row_length, k, static_cast<std::uint32_t*>(out_keys),
                                                out_positions);
  } else {
    TakeRowPrefixesKernel<<<blocks, 256, 0, s>>>(static_cast<const std::uint64_t*>(keys), positions, rows,
                                                row_length, k, static_cast<std::uint64_t*>(out_keys),
                                                out_positions);
  }
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("take row prefixes kernel");
  return Status::Ok();
}

Status TakeSegmentPrefixesAsync(KeyWidth key_width, const void* keys, const std::uint32_t* positions,
                                const std::int64_t* offsets, const std::int64_t* result_offsets,
                                std::size_t segments, void* out_keys, std::int64_t* out_positions,
                                const Stream& stream) {
  if (segments == 0 || (out_keys == nullptr && out_positions == nullptr)) return Status::Ok();
  cudaStream_t s = Native(stream);
  const auto blocks = static_cast<unsigned>(segments < 65535 * 16 ? segments : 65535 * 16);
  if (key_width == KeyWidth::k32) {
    TakeSegmentPrefixesKernel<<<blocks, 128, 0, s>>>(static_cast<const std::uint32_t*>(keys), positions, offsets,
                                                     result_offsets, segments, static_cast<std::uint32_t*>(out_keys),
                                                     out_positions);
  } else {
    TakeSegmentPrefixesKernel<<<blocks, 128, 0, s>>>(static_cast<const std::uint64_t*>(keys), positions, offsets,
                                                     result_offsets, segments, static_cast<std::uint64_t*>(out_keys),
                                                     out_positions);
  }
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("take segment prefixes kernel");
  return Status::Ok();
}

}  // namespace gpusort::kernels
