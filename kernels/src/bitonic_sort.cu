// BitonicSort: the whole array padded to N = 2^ceil(log2 count) keys, sorted by one bitonic network.
//
// Up to 4096 keys the array is a single tile of the tile pass (bitonic_network.cuh), read and written in
// place. Larger arrays live padded in temp (keys, then positions): one tile pass sorts each 4096-key tile
// (alternately ascending and descending, so neighbours form bitonic runs of 8192), then each level
// k = 8192 .. N runs its strides k/2 .. 4096 as global passes of up to four strides each (a thread holds
// 16 keys spaced by the smallest stride, so four strides cost one read and one write of the array), and
// its strides 2048 .. 1 as one tile merge pass. The last merge writes the first `count` keys (and
// positions) back to the caller's arrays. Padding is the largest key with position 0xFFFFFFFF, so it
// sorts after every real (key, position) pair.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "bitonic_network.cuh"
#include "bitonic_tiles.h"
#include "cuda_status.h"
#include "gpusort/kernels/comparison_sorts.h"

namespace gpusort::kernels {
namespace {

using bitonic::CeilLog2;
using bitonic::kMaxLogTile;

constexpr int kMaxStridesPerPass = 4;
constexpr int kStepThreads = 256;
constexpr std::uint64_t kMaxStepBlocks = 8192;

// One global pass of level k: the kStrides strides (s << (kStrides - 1)) .. s, s = 2^log_s >= 4096, over
// the whole padded array of n keys. Thread q holds the 2^kStrides keys base + t * s; k exceeds every
// stride, so they share one direction.
template <typename Key, bool kPos, int kStrides>
__global__ void __launch_bounds__(kStepThreads)
    GlobalStepKernel(Key* keys, std::uint32_t* positions, std::uint32_t n, std::uint32_t k, int log_s) {
  constexpr int kHeld = 1 << kStrides;
  const std::uint32_t s = 1u << log_s;
  const std::uint32_t groups = n >> kStrides;
  for (std::uint32_t q = blockIdx.x * kStepThreads + threadIdx.x; q < groups; q += gridDim.x * kStepThreads) {
    // q's bits below log_s stay put (so a warp's loads are contiguous); kStrides zero bits go above them.
    const std::uint32_t base = ((q >> log_s) << (log_s + kStrides)) | (q & (s - 1));
    const bool ascending = (base & k) == 0;
    Key key[kHeld];
    std::uint32_t pos[kHeld];
#pragma unroll
    for (int t = 0; t < kHeld; ++t) {
      key[t] = keys[base + t * s];
      if constexpr (kPos) pos[t] = positions[base + t * s];
    }
#pragma unroll
    for (int l = kStrides - 1; l >= 0; --l) {
#pragma unroll
      for (int t = 0; t < kHeld; ++t) {
        if ((t & (1 << l)) == 0) {
          bitonic::Order<Key, kPos>(key[t], pos[t], key[t | (1 << l)], pos[t | (1 << l)], ascending);
        }
      }
    }
#pragma unroll
    for (int t = 0; t < kHeld; ++t) {
      keys[base + t * s] = key[t];
      if constexpr (kPos) positions[base + t * s] = pos[t];
    }
  }
}

template <typename Key, bool kPos, int kStrides>
Status LaunchStep(Key* keys, std::uint32_t* positions, std::uint64_t n, std::uint64_t k, int log_s,
                  cudaStream_t stream) {
  std::uint64_t blocks = ((n >> kStrides) + kStepThreads - 1) / kStepThreads;
  blocks = blocks == 0 ? 1 : (blocks < kMaxStepBlocks ? blocks : kMaxStepBlocks);
  GlobalStepKernel<Key, kPos, kStrides><<<static_cast<unsigned>(blocks), kStepThreads, 0, stream>>>(
      keys, positions, static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(k), log_s);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("bitonic global step kernel");
  return Status::Ok();
}

template <typename Key, bool kPos>
Status StepOf(int strides, Key* keys, std::uint32_t* positions, std::uint64_t n, std::uint64_t k, int log_s,
              cudaStream_t stream) {
  switch (strides) {
    case 1: return LaunchStep<Key, kPos, 1>(keys, positions, n, k, log_s, stream);
    case 2: return LaunchStep<Key, kPos, 2>(keys, positions, n, k, log_s, stream);
    case 3: return LaunchStep<Key, kPos, 3>(keys, positions, n, k, log_s, stream);
    case 4: return LaunchStep<Key, kPos, 4>(keys, positions, n, k, log_s, stream);
    default: return Status(StatusCode::kInternal, "bitonic global pass of unsupported width");
  }
}

template <typename Key>
Status Step(int strides, Key* keys, std::uint32_t* positions, std::uint64_t n, std::uint64_t k, int log_s,
            cudaStream_t stream) {
  return positions ? StepOf<Key, true>(strides, keys, positions, n, k, log_s, stream)
                   : StepOf<Key, false>(strides, keys, nullptr, n, k, log_s, stream);
}

std::size_t AlignUp(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

std::size_t KeyBytes(KeyWidth width) { return width == KeyWidth::k32 ? 4 : 8; }

// Temp: the padded keys, then (with positions) the padded positions; none when one tile holds it all.
std::size_t TempBytesFor(const KeySortArgs& a) {
  if (a.count <= (std::size_t{1} << kMaxLogTile)) return 0;
  const std::size_t n = std::size_t{1} << CeilLog2(a.count);
  return AlignUp(n * KeyBytes(a.key_width)) + (a.positions ? n * sizeof(std::uint32_t) : 0);
}

Status CheckArgs(const KeySortArgs& a) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(RefuseKeyWidth16(a.key_width, "bitonic sort"));
  if (a.count > static_cast<std::size_t>(INT_MAX)) {
    return Status(StatusCode::kInvalidArgument, "bitonic sort of more than 2^31-1 keys");
  }
  return Status::Ok();
}

// Levels 2 * 4096 .. n over the padded array in temp, the tiles already sorted.
template <typename Key>
Status MergeLevels(const KeySortArgs& a, Key* keys, std::uint32_t* positions, std::uint64_t n,
                   cudaStream_t stream) {
  constexpr std::uint64_t kTile = std::uint64_t{1} << kMaxLogTile;
  for (std::uint64_t k = 2 * kTile; k <= n; k <<= 1) {
    // Strides k/2 .. kTile, up to four per pass, largest first.
    int log_j = CeilLog2(k) - 1;
    while (log_j >= kMaxLogTile) {
      const int strides = std::min(kMaxStridesPerPass, log_j - kMaxLogTile + 1);
      const int log_s = log_j - strides + 1;
      GPUSORT_KERNELS_RETURN_IF_ERROR(Step(strides, keys, positions, n, k, log_s, stream));
      log_j -= strides;
    }
    // Strides kTile/2 .. 1 in each tile; tile t of level k runs descending when (t * kTile) & k.
    const bool last = k == n;
    bitonic::TileJob job;
    job.tiles = n / kTile;
    job.stride = kTile;
    job.in_limit = n;
    job.out_limit = last ? a.count : n;
    job.flip_mask = k / kTile;
    job.row_positions = false;
    GPUSORT_KERNELS_RETURN_IF_ERROR(bitonic::LaunchTiles(
        a.key_width, kMaxLogTile, true, keys, positions, last ? a.keys : static_cast<void*>(keys),
        positions ? (last ? a.positions : positions) : nullptr, job, stream));
  }
  return Status::Ok();
}

template <typename Key>
Status SortPadded(const KeySortArgs& a, void* temp, cudaStream_t stream) {
  const std::uint64_t n = std::uint64_t{1} << CeilLog2(a.count);
  constexpr std::uint64_t kTile = std::uint64_t{1} << kMaxLogTile;
  auto* keys = static_cast<Key*>(temp);
  std::uint32_t* positions =
      a.positions ? reinterpret_cast<std::uint32_t*>(static_cast<char*>(temp) + AlignUp(n * sizeof(Key)))
                  : nullptr;
  // Sort every tile from the caller's keys into temp, padding included; odd tiles descending.
  bitonic::TileJob job;
  job.tiles = n / kTile;
  job.stride = kTile;
  job.in_limit = a.count;
  job.out_limit = n;
  job.flip_mask = 1;
  job.row_positions = false;
  GPUSORT_KERNELS_RETURN_IF_ERROR(
      bitonic::LaunchTiles(a.key_width, kMaxLogTile, false, a.keys, nullptr, keys, positions, job, stream));
  return MergeLevels<Key>(a, keys, positions, n, stream);
}

}  // namespace

Status BitonicSortTempBytes(const KeySortArgs& args, std::size_t* bytes) {
  *bytes = 0;
  GPUSORT_KERNELS_RETURN_IF_ERROR(CheckArgs(args));
  *bytes = TempBytesFor(args);
  return Status::Ok();
}

Status BitonicSort(const KeySortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(CheckArgs(args));
  const cudaStream_t s = Native(stream);
  if (args.count == 0) return Status::Ok();
  if (args.keys == nullptr) return Status(StatusCode::kInvalidArgument, "bitonic sort without keys");
  if (args.count == 1) {
    if (args.positions) GPUSORT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(args.positions, 0, sizeof(std::uint32_t), s));
    return Status::Ok();
  }
  const std::size_t need = TempBytesFor(args);
  if (need > 0 && (temp == nullptr || temp_bytes < need)) {
    return Status(StatusCode::kInvalidArgument, "bitonic sort with too little temporary storage");
  }
  if (need == 0) {  // one tile: sorted in place, like one row
    bitonic::TileJob job;
    job.tiles = 1;
    job.stride = args.count;
    job.in_limit = args.count;
    job.out_limit = args.count;
    job.flip_mask = 0;
    job.row_positions = true;
    return bitonic::LaunchTiles(args.key_width, CeilLog2(args.count), false, args.keys, nullptr, args.keys,
                                args.positions, job, s);
  }
  return args.key_width == KeyWidth::k32 ? SortPadded<std::uint32_t>(args, temp, s)
                                         : SortPadded<std::uint64_t>(args, temp, s);
}

}  // namespace gpusort::kernels
