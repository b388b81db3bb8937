// The tile pass that BitonicSortRows and BitonicSort share (bitonic_network.cuh): sorts, or only
// merges, tiles of 2^log_tile keys, each in registers (and shared memory for tiles of more than 1024
// keys). Internal to kernels/src.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/status.h"

namespace gpusort::kernels::bitonic {

// Smallest l with 2^l >= n.
inline int CeilLog2(std::size_t n) {
  int l = 0;
  while ((std::size_t{1} << l) < n) ++l;
  return l;
}

// Where a tile pass reads and writes. Tile t covers flat indices [t * stride, t * stride + 2^log_tile), of
// which only those below t * stride + stride and below in_limit are real keys (the rest is padding,
// which sorts last); out_limit likewise bounds what is written back.
struct TileJob {
  std::uint64_t tiles = 0;
  std::uint64_t stride = 0;     // the row length (rows), or the tile size (whole array)
  std::uint64_t in_limit = 0;
  std::uint64_t out_limit = 0;
  std::uint64_t flip_mask = 0;  // tile t's last level runs descending when t & flip_mask
  bool row_positions = true;    // positions count from each tile's start (rows) or from 0 (whole array)
  // Every tile is whole and written whole (stride == 2^log_tile, in_limit == out_limit == tiles *
  // stride, no segments) and in, out and out_pos are 16-byte aligned: tiles of one warp at most may load
  // and store each lane's keys as 16-byte vectors, with no bounds and no staging (bitonic_network.cuh).
  bool whole_tiles = false;
  // Segments instead (both set): tile t is segment segment_ids[t], keys [segment_offsets[s],
  // segment_offsets[s + 1]), all of them real (at most 2^log_tile); stride and the limits are unused.
  const std::int64_t* segment_offsets = nullptr;
  const std::uint32_t* segment_ids = nullptr;
};

// Sorts the tiles (merge_only: merges bitonic tiles, which only 2^kMaxLogTile tiles do) of `in` into
// `out` (which may be `in`) on `stream`. Positions travel when out_pos is set: made up from the index
// when sorting, read from in_pos when merging. Defined in bitonic_rows.cu.
Status LaunchTiles(KeyWidth width, int log_tile, bool merge_only, const void* in, const std::uint32_t* in_pos,
                   void* out, std::uint32_t* out_pos, const TileJob& job, cudaStream_t stream);

// LaunchTiles for one key width (bitonic_tiles_u32.cu, bitonic_tiles_u64.cu).
Status LaunchTilesU32(int log_tile, bool merge_only, const void* in, const std::uint32_t* in_pos, void* out,
                      std::uint32_t* out_pos, const TileJob& job, cudaStream_t stream);
Status LaunchTilesU64(int log_tile, bool merge_only, const void* in, const std::uint32_t* in_pos, void* out,
                      std::uint32_t* out_pos, const TileJob& job, cudaStream_t stream);

}  // namespace gpusort::kernels::bitonic
