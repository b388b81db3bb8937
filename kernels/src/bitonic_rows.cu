// BitonicSortRows: every row is one tile of the tile pass (bitonic_network.cuh), padded to the next power
// of two and sorted in registers by one lane (rows of up to 8 keys), a few lanes or one warp (up to
// 1024 keys: several rows per block, no barriers), or a block of 128 or 256 threads (2048 and 4096
// keys). Reads each key once and writes it once; needs no temp. Also LaunchTiles, which BitonicSort
// shares.
#include <climits>
#include <cstdint>

#include "bitonic_tiles.h"
#include "cuda_status.h"
#include "gpusort/kernels/comparison_sorts.h"

namespace gpusort::kernels {
namespace bitonic {
namespace {

Status CheckRows(const KeyRowsArgs& a) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(RefuseKeyWidth16(a.key_width, "bitonic row sort"));
  if (a.row_length > kBitonicRowsMaxLength) {
    return Status(StatusCode::kInvalidArgument, "bitonic row sort of rows longer than 4096 keys");
  }
  if (a.row_length != 0 && a.rows > static_cast<std::size_t>(INT_MAX) / a.row_length) {
    return Status(StatusCode::kInvalidArgument, "bitonic row sort of more than 2^31-1 keys");
  }
  return Status::Ok();
}

// Whole rows load and store in 16-byte vectors when their buffers allow it (TileJob::whole_tiles).
bool Aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

Status LaunchTiles(KeyWidth width, int log_tile, bool merge_only, const void* in, const std::uint32_t* in_pos,
                   void* out, std::uint32_t* out_pos, const TileJob& job, cudaStream_t stream) {
  return width == KeyWidth::k32 ? LaunchTilesU32(log_tile, merge_only, in, in_pos, out, out_pos, job, stream)
                                : LaunchTilesU64(log_tile, merge_only, in, in_pos, out, out_pos, job, stream);
}

}  // namespace bitonic

Status BitonicSortRowsTempBytes(const KeyRowsArgs& args, std::size_t* bytes) {
  *bytes = 0;
  return bitonic::CheckRows(args);
}

Status BitonicSortRows(const KeyRowsArgs& args, void* /*temp*/, std::size_t /*temp_bytes*/,
                       const Stream& stream) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(bitonic::CheckRows(args));
  const std::size_t count = args.rows * args.row_length;
  if (count == 0) return Status::Ok();
  if (args.keys == nullptr) return Status(StatusCode::kInvalidArgument, "bitonic row sort without keys");
  const cudaStream_t s = Native(stream);
  if (args.row_length == 1) {  // nothing to order: every position is 0
    if (args.positions) {
      GPUSORT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(args.positions, 0, count * sizeof(std::uint32_t), s));
    }
    return Status::Ok();
  }
  bitonic::TileJob job;
  job.tiles = args.rows;
  job.stride = args.row_length;
  job.in_limit = count;
  job.out_limit = count;
  job.flip_mask = 0;
  job.row_positions = true;
  const int log_tile = bitonic::CeilLog2(args.row_length);
  job.whole_tiles = args.row_length == (std::size_t{1} << log_tile) && bitonic::Aligned16(args.keys) &&
                    bitonic::Aligned16(args.positions);
  return bitonic::LaunchTiles(args.key_width, log_tile, false, args.keys, nullptr, args.keys, args.positions, job, s);
}

}  // namespace gpusort::kernels
