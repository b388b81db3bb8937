// Building blocks of QUICKSORT (quicksort.cu), each run by a whole thread block: (key, position)
// elements and their total order, the sampled pivot, one tile's three-way partition, and a bitonic
// network in shared memory for the small ranges (and in global memory for the non-recursive fallback).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gpusort::kernels::quicksort {

inline constexpr int kThreads = 512;  // every quicksort kernel but the fill runs 512-thread blocks
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kItems = 8;                         // keys per thread in a partition tile
inline constexpr unsigned kTile = kThreads * kItems;     // keys one block partitions at a time
inline constexpr unsigned kLeafMax = 4096;               // ranges this small are sorted in shared memory
inline constexpr int kSamples = 63;                      // the pivot is the median of this many keys

// A key and, when the sort carries positions, its input position (otherwise 0 and never read).
template <typename Key>
struct Elem {
  Key key;
  std::uint32_t pos;
};

// keys[0] and pos[0] are the caller's arrays, where every result lands; keys[1] and pos[1] the
// ping-pong copies in temp. A range at parity p lives in buffer p; partitioning moves it to 1 - p.
template <typename Key>
struct Buffers {
  Key* keys[2];
  std::uint32_t* pos[2];
};

template <typename Key>
__device__ __forceinline__ Key* KeysOf(const Buffers<Key>& b, int parity) {
  return parity ? b.keys[1] : b.keys[0];
}

template <typename Key>
__device__ __forceinline__ std::uint32_t* PositionsOf(const Buffers<Key>& b, int parity) {
  return parity ? b.pos[1] : b.pos[0];
}

// With positions no two elements are equal, so every algorithm below lands on std::stable_sort's order.
template <typename Key, bool kPos>
__device__ __forceinline__ bool Less(const Elem<Key>& a, const Elem<Key>& b) {
  if constexpr (kPos) {
    return a.key < b.key || (a.key == b.key && a.pos < b.pos);
  } else {
    return a.key < b.key;
  }
}

// `iota`: the range has never been moved, so a key's position is its index (nothing to read). Loads
// bypass L1 (ld.global.cg): a grid reads what other grids, possibly on the same SM moments before,
// wrote to the same addresses, and L2 is where every SM agrees.
template <typename Key, bool kPos>
__device__ __forceinline__ Elem<Key> LoadElem(const Buffers<Key>& b, int parity, bool iota, std::uint32_t i) {
  Elem<Key> e;
  e.key = __ldcg(KeysOf(b, parity) + i);
  e.pos = 0;
  if constexpr (kPos) e.pos = iota ? i : __ldcg(PositionsOf(b, parity) + i);
  return e;
}

template <typename Key, bool kPos>
__device__ __forceinline__ void StoreElem(const Buffers<Key>& b, int parity, std::uint32_t i, const Elem<Key>& e) {
  KeysOf(b, parity)[i] = e.key;
  if constexpr (kPos) PositionsOf(b, parity)[i] = e.pos;
}

// The smallest power of two >= m, for 1 <= m <= 2^31.
__device__ __forceinline__ std::uint32_t PowerOfTwoAtLeast(std::uint32_t m) {
  return m <= 1 ? 1u : 1u << (32 - __clz(m - 1));
}

// ---- Bitonic network (the variant whose comparators all put the smaller element first) ----
//
// Stage k (k = 2, 4, ..., size) first compares i with its mirror in the k-block (i ^ (k-1)), then
// half-cleans with distances k/4, ..., 1. Because every comparator is ascending, padding a range up to
// a power of two with +infinity never moves a padding element below a real one: comparators whose
// upper element lies past the range can be skipped, and a partial tile can be padded with sentinels.

// Comparator c (0 <= c < size/2) of a step with distance `half`: its lower element, whose `half` bit is
// clear, and its partner (the mirror in the 2*half-block, or the element `half` above).
__device__ __forceinline__ void Comparator(std::uint32_t c, std::uint32_t half, bool flip, std::uint32_t* i,
                                           std::uint32_t* j) {
  *i = ((c & ~(half - 1)) << 1) | (c & (half - 1));
  *j = flip ? (*i ^ (2 * half - 1)) : (*i + half);
}

template <typename Key, bool kPos>
__device__ __forceinline__ void CompareSwap(Key* keys, std::uint32_t* pos, std::uint32_t i, std::uint32_t j) {
  const Key a = keys[i], b = keys[j];
  if constexpr (kPos) {
    const std::uint32_t pa = pos[i], pb = pos[j];
    if (b < a || (b == a && pb < pa)) {
      keys[i] = b;
      keys[j] = a;
      pos[i] = pb;
      pos[j] = pa;
    }
  } else {
    if (b < a) {
      keys[i] = b;
      keys[j] = a;
    }
  }
}

// One network step over `size` (a power of two) elements in shared memory.
template <typename Key, bool kPos>
__device__ void SharedStep(Key* sk, std::uint32_t* sp, std::uint32_t size, std::uint32_t half, bool flip) {
  for (std::uint32_t c = threadIdx.x; c < size / 2; c += blockDim.x) {
    std::uint32_t i, j;
    Comparator(c, half, flip, &i, &j);
    CompareSwap<Key, kPos>(sk, sp, i, j);
  }
  __syncthreads();
}

// Half-cleaners with distances from_half, from_half/2, ..., 1.
template <typename Key, bool kPos>
__device__ void SharedMerge(Key* sk, std::uint32_t* sp, std::uint32_t size, std::uint32_t from_half) {
  for (std::uint32_t half = from_half; half > 0; half >>= 1) SharedStep<Key, kPos>(sk, sp, size, half, false);
}

template <typename Key, bool kPos>
__device__ void SharedSort(Key* sk, std::uint32_t* sp, std::uint32_t size) {
  for (std::uint32_t k = 2; k <= size; k <<= 1) {
    SharedStep<Key, kPos>(sk, sp, size, k / 2, true);
    SharedMerge<Key, kPos>(sk, sp, size, k / 4);
  }
}

// Loads [lo, hi) (at most kLeafMax elements) into shared memory padded with +infinity up to `size`.
template <typename Key, bool kPos>
__device__ void LoadTile(const Buffers<Key>& b, int parity, bool iota, std::uint32_t lo, std::uint32_t hi,
                         std::uint32_t size, Key* sk, std::uint32_t* sp) {
  const std::uint32_t m = hi - lo;
  for (std::uint32_t i = threadIdx.x; i < size; i += blockDim.x) {
    Elem<Key> e{static_cast<Key>(~Key{0}), ~0u};  // sorts after every real (key, position < 2^31)
    if (i < m) e = LoadElem<Key, kPos>(b, parity, iota, lo + i);
    sk[i] = e.key;
    if constexpr (kPos) sp[i] = e.pos;
  }
  __syncthreads();
}

// Writes the first hi - lo shared-memory elements to the caller's arrays at lo.
template <typename Key, bool kPos>
__device__ void StoreTile(const Buffers<Key>& b, std::uint32_t lo, std::uint32_t hi, const Key* sk,
                          const std::uint32_t* sp) {
  for (std::uint32_t i = threadIdx.x; i < hi - lo; i += blockDim.x) {
    Elem<Key> e{sk[i], 0};
    if constexpr (kPos) e.pos = sp[i];
    StoreElem<Key, kPos>(b, 0, lo + i, e);
  }
  __syncthreads();  // shared memory is reused next
}

// Sorts [lo, hi) (1 to kLeafMax elements) of buffer `parity` into its final place in the caller's arrays.
template <typename Key, bool kPos>
__device__ void LeafSort(const Buffers<Key>& b, int parity, bool iota, std::uint32_t lo, std::uint32_t hi,
                         Key* sk, std::uint32_t* sp) {
  const std::uint32_t size = PowerOfTwoAtLeast(hi - lo);
  LoadTile<Key, kPos>(b, parity, iota, lo, hi, size, sk, sp);
  SharedSort<Key, kPos>(sk, sp, size);
  StoreTile<Key, kPos>(b, lo, hi, sk, sp);
}

// One network step of the fallback over [lo, lo + m) of the caller's arrays, run by one block.
template <typename Key, bool kPos>
__device__ void GlobalStep(const Buffers<Key>& b, std::uint32_t lo, std::uint32_t m, std::uint32_t size,
                           std::uint32_t half, bool flip) {
  Key* keys = b.keys[0] + lo;
  std::uint32_t* pos = kPos ? b.pos[0] + lo : nullptr;
  for (std::uint32_t c = threadIdx.x; c < size / 2; c += blockDim.x) {
    std::uint32_t i, j;
    Comparator(c, half, flip, &i, &j);
    if (j < m) CompareSwap<Key, kPos>(keys, pos, i, j);  // j >= m: the partner is padding; nothing moves
  }
  __syncthreads();
}

// The non-recursive fallback: a bitonic sort of [lo, hi) (any length) by one block, O(m log^2 m) and
// never worse. Tiles are sorted in shared memory; each later stage runs its long-distance steps in
// global memory and its last log2(kLeafMax) steps tile by tile in shared memory.
template <typename Key, bool kPos>
__device__ void NetworkSort(const Buffers<Key>& b, int parity, bool iota, std::uint32_t lo, std::uint32_t hi,
                            Key* sk, std::uint32_t* sp) {
  const std::uint32_t m = hi - lo;
  const std::uint32_t size = PowerOfTwoAtLeast(m);
  for (std::uint32_t t = lo; t < hi; t += kLeafMax) {
    LeafSort<Key, kPos>(b, parity, iota, t, hi - t < kLeafMax ? hi : t + kLeafMax, sk, sp);
  }
  for (unsigned long long k = 2ull * kLeafMax; k <= size; k <<= 1) {
    GlobalStep<Key, kPos>(b, lo, m, size, static_cast<std::uint32_t>(k / 2), true);
    for (unsigned long long half = k / 4; half >= kLeafMax; half >>= 1) {
      GlobalStep<Key, kPos>(b, lo, m, size, static_cast<std::uint32_t>(half), false);
    }
    for (std::uint32_t t = lo; t < hi; t += kLeafMax) {
      const std::uint32_t t_hi = hi - t < kLeafMax ? hi : t + kLeafMax;
      LoadTile<Key, kPos>(b, 0, false, t, t_hi, kLeafMax, sk, sp);
      SharedMerge<Key, kPos>(sk, sp, kLeafMax, kLeafMax / 2);
      StoreTile<Key, kPos>(b, t, t_hi, sk, sp);
    }
  }
}

// ---- Partition ----

template <typename Key>
struct PartitionShared {
  Elem<Key> samples[kSamples];
  Elem<Key> pivot;
  std::uint32_t warp_lt[kWarps];  // per warp: its count, then (after the scan) its offset in the block
  std::uint32_t warp_gt[kWarps];
  std::uint32_t lt_base;  // where this tile's "<" keys start in the destination buffer
  std::uint32_t gt_base;  // where its ">" keys start
  std::uint32_t run_lt;   // one block partitioning a whole range: "<" and ">" keys placed so far
  std::uint32_t run_gt;
  unsigned long long totals;
  int flag;
};

// The median of kSamples keys spread evenly over [lo, hi) (hi - lo > kLeafMax), the same in every block
// that asks. Ranks break ties by sample index, so exactly one sample has the middle rank.
template <typename Key, bool kPos>
__device__ Elem<Key> ChoosePivot(const Buffers<Key>& b, int parity, bool iota, std::uint32_t lo, std::uint32_t hi,
                                 PartitionShared<Key>& sm) {
  const std::uint32_t m = hi - lo;
  const int t = threadIdx.x;
  if (t < kSamples) {
    const auto offset = static_cast<std::uint32_t>((2ull * t + 1) * m / (2 * kSamples));
    sm.samples[t] = LoadElem<Key, kPos>(b, parity, iota, lo + offset);
  }
  __syncthreads();
  if (t < kSamples) {
    const Elem<Key> me = sm.samples[t];
    int rank = 0;
    for (int j = 0; j < kSamples; ++j) {
      const Elem<Key> other = sm.samples[j];
      rank += Less<Key, kPos>(other, me) || (j < t && !Less<Key, kPos>(me, other));
    }
    if (rank == kSamples / 2) sm.pivot = me;
  }
  __syncthreads();
  return sm.pivot;
}

// Three-way partition of the tile [tile_lo, tile_hi) of the range [lo, hi), buffer `parity`, into buffer
// 1 - parity: keys below the pivot go to the front of the range, keys above it to the back, keys equal
// to it nowhere (the caller fills the middle with the pivot). Within a block, each warp's keys of a side
// are ranked with ballots, so a warp writes its share of a side as one contiguous run. bases(lt, gt,
// &lt_base, &gt_base), run by thread 0, turns the block's counts into its offsets within the two sides
// (an atomic on the range's counter, or a running sum when one block does the whole range).
template <typename Key, bool kPos, typename Bases>
__device__ void PartitionTile(const Buffers<Key>& b, int parity, bool iota, std::uint32_t tile_lo, std::uint32_t tile_hi,
                              const Elem<Key>& pivot, std::uint32_t lo, std::uint32_t hi, PartitionShared<Key>& sm,
                              Bases bases) {
  const std::uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::uint32_t lanes_below = (1u << lane) - 1;
  Elem<Key> e[kItems];
  std::uint32_t rank[kItems];
  int side[kItems];  // 0: equal to the pivot or past the tile, 1: below, 2: above
#pragma unroll
  for (int j = 0; j < kItems; ++j) {  // all loads first, so that they are in flight together
    const std::uint32_t i = tile_lo + j * kThreads + threadIdx.x;
    e[j] = Elem<Key>{0, 0};
    if (i < tile_hi) e[j] = LoadElem<Key, kPos>(b, parity, iota, i);
  }
  std::uint32_t warp_lt = 0, warp_gt = 0;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    side[j] = 0;
    if (tile_lo + j * kThreads + threadIdx.x < tile_hi) {
      side[j] = Less<Key, kPos>(e[j], pivot) ? 1 : (Less<Key, kPos>(pivot, e[j]) ? 2 : 0);
    }
    const std::uint32_t below = __ballot_sync(0xFFFFFFFFu, side[j] == 1);
    const std::uint32_t above = __ballot_sync(0xFFFFFFFFu, side[j] == 2);
    rank[j] = side[j] == 1 ? warp_lt + __popc(below & lanes_below) : warp_gt + __popc(above & lanes_below);
    warp_lt += __popc(below);
    warp_gt += __popc(above);
  }
  if (lane == 0) {
    sm.warp_lt[warp] = warp_lt;
    sm.warp_gt[warp] = warp_gt;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    std::uint32_t lt = 0, gt = 0;
    for (int w = 0; w < kWarps; ++w) {
      const std::uint32_t a = sm.warp_lt[w], c = sm.warp_gt[w];
      sm.warp_lt[w] = lt;
      sm.warp_gt[w] = gt;
      lt += a;
      gt += c;
    }
    std::uint32_t lt_base, gt_base;
    bases(lt, gt, &lt_base, &gt_base);
    sm.lt_base = lo + lt_base;
    sm.gt_base = hi - gt_base - gt;
  }
  __syncthreads();
  const std::uint32_t lt0 = sm.lt_base + sm.warp_lt[warp], gt0 = sm.gt_base + sm.warp_gt[warp];
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    if (side[j] == 1) StoreElem<Key, kPos>(b, 1 - parity, lt0 + rank[j], e[j]);
    if (side[j] == 2) StoreElem<Key, kPos>(b, 1 - parity, gt0 + rank[j], e[j]);
  }
  __syncthreads();  // the shared counters are reused by the next tile
}

}  // namespace gpusort::kernels::quicksort
