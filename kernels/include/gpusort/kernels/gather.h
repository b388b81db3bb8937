// Small data-movement kernels around the sorts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"

namespace gpusort::kernels {

// out[i] = in[order[i]] for elements of `width` bytes (any width from 1 to 256).
Status GatherAsync(const void* in, const std::uint32_t* order, void* out, std::size_t count,
                   std::size_t width, const Stream& stream);

// Row-relative positions (0..row_length-1 in each row, as the row sorts write them) -> positions in the
// whole array, in place: positions[i] += (i / row_length) * row_length. For gathering values by them.
Status OffsetRowPositionsAsync(std::uint32_t* positions, std::size_t rows, std::size_t row_length,
                               const Stream& stream);

// The first k keys and positions of each sorted row, packed: out_keys[r * k + j] = keys[r * row_length
// + j] and likewise for the positions, widened to int64. Either output may be null when not wanted.
Status TakeRowPrefixesAsync(KeyWidth key_width, const void* keys, const std::uint32_t* positions,
                            std::size_t rows, std::size_t row_length, std::size_t k, void* out_keys,
                            std::int64_t* out_positions, const Stream& stream);

// The same for segments of any lengths (device offsets, segments + 1 entries each): segment s's first
// min(k, its length) sorted keys and positions go to results [result_offsets[s], result_offsets[s+1]).
// `positions` count from the array's start (as SegmentSort leaves them); the output counts from the
// segment's. Either output may be null when not wanted.
Status TakeSegmentPrefixesAsync(KeyWidth key_width, const void* keys, const std::uint32_t* positions,
                                const std::int64_t* offsets, const std::int64_t* result_offsets,
                                std::size_t segments, void* out_keys, std::int64_t* out_positions,
                                const Stream& stream);

// The most pieces WidenPiecePositionsAsync takes: a kernel parameter holds them.
inline constexpr int kMaxPieces = 64;

// Keys gathered from several sorted runs into one buffer, piece j at [begin[j], begin[j + 1]), each
// piece's positions counting from its run's start `base[j]` in the whole array.
struct PieceBases {
  int count = 0;
  std::uint64_t begin[kMaxPieces + 1] = {};
  std::int64_t base[kMaxPieces] = {};
};

// out[i] = base[j] + local[i] for every i of piece j: the gathered keys' positions in the whole array.
Status WidenPiecePositionsAsync(const std::uint32_t* local, const PieceBases& pieces, std::int64_t* out,
                                const Stream& stream);

}  // namespace gpusort::kernels
