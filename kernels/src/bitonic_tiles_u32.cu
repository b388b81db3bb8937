// The bitonic tile pass for uint32_t keys (bitonic_tiles_impl.cuh).
#include "bitonic_tiles_impl.cuh"

namespace gpusort::kernels::bitonic {

Status LaunchTilesU32(int log_tile, bool merge_only, const void* in, const std::uint32_t* in_pos, void* out,
                      std::uint32_t* out_pos, const TileJob& job, cudaStream_t stream) {
  return detail::LaunchTilesOf<std::uint32_t>(log_tile, merge_only, in, in_pos, out, out_pos, job, stream);
}

}  // namespace gpusort::kernels::bitonic
