// OddEvenSort: odd-even transposition sort of the whole array by one block, in shared memory.
//
// Phase p orders the pairs (i, i + 1) with i = p mod 2, 4, ...; after `count` phases any input is sorted.
// Each of up to 1024 threads takes every blockDim-th pair of a phase (at most two: count <= 4096), and
// one __syncthreads, reached by every thread, separates the phases. It swaps only neighbours that are
// strictly out of order, so it is stable even on keys alone; with positions it compares (key, position)
// pairs like the other sorts. O(count^2) work by design, hence kOddEvenMaxKeys.
#include <cstdint>

#include "cuda_status.h"
#include "gpusort/kernels/comparison_sorts.h"

namespace gpusort::kernels {
namespace {

constexpr int kMaxThreads = 1024;

// 4096 keys of 8 bytes and their positions: 48 KiB, the most static shared memory a block may have.
template <typename Key, bool kPos>
__global__ void __launch_bounds__(kMaxThreads)
    OddEvenKernel(Key* keys, std::uint32_t* positions, int count) {
  __shared__ Key skey[kOddEvenMaxKeys];
  __shared__ std::uint32_t spos[kPos ? kOddEvenMaxKeys : 1];
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    skey[i] = keys[i];
    if constexpr (kPos) spos[i] = static_cast<std::uint32_t>(i);
  }
  __syncthreads();
  for (int phase = 0; phase < count; ++phase) {
    for (int i = 2 * static_cast<int>(threadIdx.x) + (phase & 1); i + 1 < count; i += 2 * blockDim.x) {
      const Key a = skey[i], b = skey[i + 1];
      bool swap = b < a;
      if constexpr (kPos) swap = swap || (a == b && spos[i + 1] < spos[i]);
      if (swap) {
        skey[i] = b;
        skey[i + 1] = a;
        if constexpr (kPos) {
          const std::uint32_t p = spos[i];
          spos[i] = spos[i + 1];
          spos[i + 1] = p;
        }
      }
    }
    __syncthreads();  // outside the pair loop: every thread reaches it once per phase
  }
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    keys[i] = skey[i];
    if constexpr (kPos) positions[i] = spos[i];
  }
}

template <typename Key>
Status Launch(const KeySortArgs& a, cudaStream_t stream) {
  const int count = static_cast<int>(a.count);
  // One thread per pair of the even phase, whole warps.
  int threads = ((count + 1) / 2 + 31) / 32 * 32;
  threads = threads < kMaxThreads ? threads : kMaxThreads;
  auto* keys = static_cast<Key*>(a.keys);
  if (a.positions) {
    OddEvenKernel<Key, true><<<1, threads, 0, stream>>>(keys, a.positions, count);
  } else {
    OddEvenKernel<Key, false><<<1, threads, 0, stream>>>(keys, nullptr, count);
  }
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("odd-even sort kernel");
  return Status::Ok();
}

Status CheckArgs(const KeySortArgs& a) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(RefuseKeyWidth16(a.key_width, "odd-even sort"));
  if (a.count > kOddEvenMaxKeys) {
    return Status(StatusCode::kInvalidArgument, "odd-even sort of more than kOddEvenMaxKeys (4096) keys");
  }
  return Status::Ok();
}

}  // namespace

Status OddEvenSortTempBytes(const KeySortArgs& args, std::size_t* bytes) {
  *bytes = 0;
  return CheckArgs(args);
}

Status OddEvenSort(const KeySortArgs& args, void* /*temp*/, std::size_t /*temp_bytes*/, const Stream& stream) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(CheckArgs(args));
  if (args.count == 0) return Status::Ok();
  if (args.keys == nullptr) return Status(StatusCode::kInvalidArgument, "odd-even sort without keys");
  const cudaStream_t s = Native(stream);
  if (args.count == 1) {
    if (args.positions) GPUSORT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(args.positions, 0, sizeof(std::uint32_t), s));
    return Status::Ok();
  }
  return args.key_width == KeyWidth::k32 ? Launch<std::uint32_t>(args, s) : Launch<std::uint64_t>(args, s);
}

}  // namespace gpusort::kernels
