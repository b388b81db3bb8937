// The tile pass's launches for one key type (bitonic_tiles_u32.cu, bitonic_tiles_u64.cu instantiate it,
// so that the two widths' 26 kernels each compile in parallel).
#pragma once

#include <cstdint>

#include "bitonic_network.cuh"
#include "bitonic_tiles.h"
#include "cuda_status.h"

namespace gpusort::kernels::bitonic {
namespace detail {

template <typename Key, bool kPos, int kLogP, bool kMergeOnly>
Status Launch(const void* in, const std::uint32_t* in_pos, void* out, std::uint32_t* out_pos,
              const TileJob& job, cudaStream_t stream) {
  using S = Shape<kLogP>;
  // One block per kTilesPerBlock tiles: tiles <= 2^31 - 1, so this fits gridDim.x.
  if (job.tiles == 0) return Status::Ok();
  const std::uint64_t blocks = (job.tiles + S::kTilesPerBlock - 1) / S::kTilesPerBlock;
  TileKernel<Key, kPos, kLogP, kMergeOnly><<<static_cast<unsigned>(blocks), S::kThreads, 0, stream>>>(
      static_cast<const Key*>(in), in_pos, static_cast<Key*>(out), out_pos, job);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("bitonic tile kernel");
  return Status::Ok();
}

template <typename Key, bool kPos>
Status LaunchSort(int log_tile, const void* in, void* out, std::uint32_t* out_pos, const TileJob& job,
                  cudaStream_t stream) {
  switch (log_tile) {
    case 1: return Launch<Key, kPos, 1, false>(in, nullptr, out, out_pos, job, stream);
    case 2: return Launch<Key, kPos, 2, false>(in, nullptr, out, out_pos, job, stream);
    case 3: return Launch<Key, kPos, 3, false>(in, nullptr, out, out_pos, job, stream);
    case 4: return Launch<Key, kPos, 4, false>(in, nullptr, out, out_pos, job, stream);
    case 5: return Launch<Key, kPos, 5, false>(in, nullptr, out, out_pos, job, stream);
    case 6: return Launch<Key, kPos, 6, false>(in, nullptr, out, out_pos, job, stream);
    case 7: return Launch<Key, kPos, 7, false>(in, nullptr, out, out_pos, job, stream);
    case 8: return Launch<Key, kPos, 8, false>(in, nullptr, out, out_pos, job, stream);
    case 9: return Launch<Key, kPos, 9, false>(in, nullptr, out, out_pos, job, stream);
    case 10: return Launch<Key, kPos, 10, false>(in, nullptr, out, out_pos, job, stream);
    case 11: return Launch<Key, kPos, 11, false>(in, nullptr, out, out_pos, job, stream);
    case 12: return Launch<Key, kPos, 12, false>(in, nullptr, out, out_pos, job, stream);
    default: return Status(StatusCode::kInternal, "bitonic tile of unsupported size");
  }
}

template <typename Key>
Status LaunchTilesOf(int log_tile, bool merge_only, const void* in, const std::uint32_t* in_pos, void* out,
                     std::uint32_t* out_pos, const TileJob& job, cudaStream_t stream) {
  if (merge_only) {
    if (log_tile != kMaxLogTile) return Status(StatusCode::kInternal, "bitonic merge of unsupported size");
    return out_pos ? Launch<Key, true, kMaxLogTile, true>(in, in_pos, out, out_pos, job, stream)
                   : Launch<Key, false, kMaxLogTile, true>(in, nullptr, out, nullptr, job, stream);
  }
  return out_pos ? LaunchSort<Key, true>(log_tile, in, out, out_pos, job, stream)
                 : LaunchSort<Key, false>(log_tile, in, out, nullptr, job, stream);
}

}  // namespace detail
}  // namespace gpusort::kernels::bitonic
