// The bitonic network of one tile of 2^kLogP keys (a row of BitonicSortRows, or a tile of the padded
// array of BitonicSort), held in registers.
//
// A tile is spread over kG lanes with kR registers each, blocked: key e of the tile sits in register
// e % kR of lane e / kR. So a compare-exchange at stride j pairs
//   j <  kR:            two registers of the same lane (no communication: most steps are these),
//   kR <= j < 32 * kR:  the same register of two lanes of one warp (one __shfl_xor_sync),
//   j >= 32 * kR:       lanes of different warps (tiles of 2048 and 4096 keys only): those strides of a
//                       level run in shared memory between one store and one load of the registers.
// Tiles of up to 1024 keys fit one warp (no __syncthreads at all; several tiles per block). Tiles of a
// warp or more are read and written through shared memory (coalesced in global memory, transposed to
// the blocked layout in shared memory, XOR-swizzled so that neither side has bank conflicts); smaller
// tiles load their lanes' keys directly (a warp's keys are contiguous, so L1 absorbs it). Whole tiles of
// a warp at most whose buffers are 16-byte aligned (rows of a power-of-two length) skip both: each lane
// reads and writes its contiguous keys as 16-byte vectors (TileJob::whole_tiles).
//
// The network is the classic one with directions: at level k (sorted runs of k/2 become runs of k), the
// pair (e, e ^ j) is ordered ascending when e & k == 0 and descending otherwise; the last level
// (k = 2^kLogP) runs ascending unless the caller flips it (the whole-array sort alternates tile
// directions so that two neighbouring tiles form one bitonic sequence).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "bitonic_tiles.h"

namespace gpusort::kernels::bitonic {

inline constexpr int kMaxLogTile = 12;  // 4096 keys: kBitonicRowsMaxLength, and the whole-array tile
inline constexpr std::uint32_t kPaddingPosition = 0xFFFFFFFFu;  // sorts after every real position

__host__ __device__ constexpr int Log2(int x) { return x <= 1 ? 0 : 1 + Log2(x / 2); }

// How a tile of 2^kLogP keys is laid out: up to 8 keys one lane (kR = 8 registers at most), up to 256
// keys up to one warp of 8 registers, 512 and 1024 keys one warp of 16 and 32 registers, 2048 and 4096
// keys 128 and 256 lanes of 16 registers.
template <int kLogP>
struct Shape {
  static_assert(kLogP >= 1 && kLogP <= kMaxLogTile, "tile of 2 to 4096 keys");
  static constexpr int kP = 1 << kLogP;
  static constexpr int kR = kLogP <= 3 ? kP : kLogP <= 8 ? 8 : kLogP == 9 ? 16 : kLogP == 10 ? 32 : 16;
  static constexpr int kLogR = Log2(kR);
  static constexpr int kG = kP / kR;       // lanes per tile
  static constexpr bool kBlock = kG > 32;  // the tile spans warps: strides of 32 * kR and up in shared memory
  static constexpr bool kStaged = kG >= 32;  // loads and stores go through shared memory
  // Warp tiles of 16 or 32 registers: 4 per block, so that their staging fits 48 KiB (8-byte keys and
  // positions).
  static constexpr int kThreads = kBlock ? kG : (kG == 32 && kR >= 16 ? 128 : 256);
  static constexpr int kTilesPerBlock = kThreads / kG;
  static constexpr int kSharedKeys = kStaged ? kTilesPerBlock * kP : 1;
};

// Where key e of a tile lives in shared memory: e with its low five bits XORed with the next five.
// Within any aligned run of 32 keys this is a permutation (a warp reading consecutive keys hits 32
// banks), and a warp reading the blocked layout (lane g at g * kR + r, kR = 8, 16 or 32) does too.
__device__ __forceinline__ int Swizzle(int e) { return e ^ ((e >> 5) & 31); }

template <typename Key, bool kPos>
__device__ __forceinline__ bool Less(Key a, std::uint32_t pa, Key b, std::uint32_t pb) {
  if constexpr (kPos) return a < b || (a == b && pa < pb);
  return a < b;
}

// 32-bit keys without positions order a pair by min and max (IMNMX), where the general form compares and
// swaps by selects. The network is bound by the ALU pipe that runs all of these (ncu at 65536 rows x 256
// keys: ALU 91% busy; memory traffic would take 0.045 ms). Measured on the H100 (BENCHMARKS.md, issue
// 18): the general form 0.170 ms, min and max 0.101 ms, and with the complemented levels of Network
// below 0.087 ms. 64-bit keys have no one-instruction min or max: they keep the general form.
template <typename Key, bool kPos>
inline constexpr bool kMinMax = !kPos && sizeof(Key) == 4;

template <typename Key>
__device__ __forceinline__ Key Min(Key a, Key b) { return b < a ? b : a; }
template <typename Key>
__device__ __forceinline__ Key Max(Key a, Key b) { return a < b ? b : a; }

// Puts (a, b) in ascending order when `ascending`, else descending. Equal pairs are only ever identical
// (keys alone, or two padding keys), so swapping them or not makes no difference.
template <typename Key, bool kPos>
__device__ __forceinline__ void Order(Key& a, std::uint32_t& pa, Key& b, std::uint32_t& pb, bool ascending) {
  if constexpr (kMinMax<Key, kPos>) {
    const Key lo = Min(a, b), hi = Max(a, b);
    a = ascending ? lo : hi;
    b = ascending ? hi : lo;
  } else if (Less<Key, kPos>(b, pb, a, pa) == ascending) {
    const Key k = a;
    a = b;
    b = k;
    if constexpr (kPos) {
      const std::uint32_t p = pa;
      pa = pb;
      pb = p;
    }
  }
}

// Shared memory between the lanes of one tile: the warp's own (tiles of a warp at most) or the block's.
template <bool kBlock>
__device__ __forceinline__ void TileBarrier() {
  if constexpr (kBlock) {
    __syncthreads();
  } else {
    __syncwarp();
  }
}

// Stride j < kR: register r meets register r + j of the same lane. kAscending: every pair ascending
// (the lane's keys are complemented where its level runs descending, see Network).
template <typename Key, bool kPos, int kLogR, bool kAscending = false>
__device__ __forceinline__ void RegisterStep(Key (&key)[1 << kLogR], std::uint32_t (&pos)[1 << kLogR], int g,
                                             int k, int j, bool flip) {
  constexpr int kR = 1 << kLogR;
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    if ((r & j) == 0) {
      const bool ascending = kAscending || ((((g << kLogR) | r) & k) == 0) != flip;
      Order<Key, kPos>(key[r], pos[r], key[r | j], pos[r | j], ascending);
    }
  }
}

// Stride kR <= j < 32 * kR: lane g meets lane g ^ (j / kR) of the same warp, register for register;
// each keeps the smaller or the larger of the pair. k > j >= kR, so the direction is the lane's alone.
// Every lane of the warp runs this (full mask): lanes of tiles past the end carry padding.
template <typename Key, bool kPos, int kLogR, bool kAscending = false>
__device__ __forceinline__ void ShuffleStep(Key (&key)[1 << kLogR], std::uint32_t (&pos)[1 << kLogR], int g,
                                            int k, int j, bool flip) {
  constexpr int kR = 1 << kLogR;
  const int lanes = j >> kLogR;
  const bool lower = (g & lanes) == 0;
  const bool keep_min = lower == (kAscending || ((((g << kLogR) & k) == 0) != flip));
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    const Key other_key = __shfl_xor_sync(0xFFFFFFFFu, key[r], lanes);
    if constexpr (kMinMax<Key, kPos>) {
      // A compare (its result XORed with keep_min) and a select. Equal keys may be taken or not: they
      // are the same bits.
      if ((other_key < key[r]) == keep_min) key[r] = other_key;
    } else {
      std::uint32_t other_pos = 0;
      if constexpr (kPos) other_pos = __shfl_xor_sync(0xFFFFFFFFu, pos[r], lanes);
      const bool take = keep_min ? Less<Key, kPos>(other_key, other_pos, key[r], pos[r])
                                 : Less<Key, kPos>(key[r], pos[r], other_key, other_pos);
      if (take) {
        key[r] = other_key;
        if constexpr (kPos) pos[r] = other_pos;
      }
    }
  }
}

// Stride j = 2^lj >= 32 * kR on the tile in shared memory: lane g orders pairs g, g + kG, ... of the
// tile's 2^kLogP / 2 pairs; pair q is (i, i + j) with i = q with a zero inserted at bit lj. A warp's
// 32 pairs are 32 consecutive keys and their 32 partners: no bank conflicts.
template <typename Key, bool kPos, int kG, int kR>
__device__ __forceinline__ void SharedStep(Key* skey, std::uint32_t* spos, int g, int k, int lj, bool flip) {
  const int j = 1 << lj;
#pragma unroll
  for (int h = 0; h < kR / 2; ++h) {
    const int q = h * kG + g;
    const int i = ((q >> lj) << (lj + 1)) | (q & (j - 1));
    const int a = Swizzle(i), b = Swizzle(i + j);
    const bool ascending = ((i & k) == 0) != flip;
    if constexpr (kPos) {
      Order<Key, true>(skey[a], spos[a], skey[b], spos[b], ascending);
    } else {
      std::uint32_t none_a = 0, none_b = 0;  // keys alone: Order never reads these
      Order<Key, false>(skey[a], none_a, skey[b], none_b, ascending);
    }
  }
}

// Runs the network's levels kFirstLevel..kLogP on the tile this lane holds a part of: kFirstLevel 1
// sorts it, kFirstLevel kLogP only merges a bitonic tile. `flip` turns the last level descending.
// skey/spos: this tile's 2^kLogP shared slots (used here by tiles of more than 32 lanes only). Every
// thread of the block must call this the same number of times (it holds __syncthreads for those tiles).
// Levels whose direction is the lane's own (k >= kR: bit lk of a key's index is a bit of its lane) cost
// a compare-exchange two min/max instructions and two selects of them by the direction. For 32-bit keys
// alone, within a warp's tile, a lane whose level runs descending instead complements its keys (~x
// reverses the unsigned order) and every pair of the level runs ascending: two instructions a pair. The
// complement is a multiply-add (x * -1 + -1 == ~x), which runs on the FMA pipe, where the network's
// compares and selects all run on the ALU pipe (the pipe ncu found 91% busy at 65536 rows x 256).
template <typename Key, bool kPos, int kLogP>
inline constexpr bool kComplementLevels = kMinMax<Key, kPos> && !Shape<kLogP>::kBlock;

// key * (change ? -1 : 1) + (change ? -1 : 0) for every register: complements them all when `change`.
template <typename Key, int kR>
__device__ __forceinline__ void ComplementIf(Key (&key)[kR], bool change) {
  const Key times = change ? static_cast<Key>(~Key{0}) : Key{1};
  const Key plus = change ? static_cast<Key>(~Key{0}) : Key{0};
#pragma unroll
  for (int r = 0; r < kR; ++r) key[r] = key[r] * times + plus;
}

template <typename Key, bool kPos, int kLogP, int kFirstLevel>
__device__ __forceinline__ void Network(Key (&key)[Shape<kLogP>::kR], std::uint32_t (&pos)[Shape<kLogP>::kR],
                                        Key* skey, std::uint32_t* spos, int g, bool flip) {
  using S = Shape<kLogP>;
  constexpr int kG = S::kG, kR = S::kR, kLogR = S::kLogR;
  constexpr int kLogShared = kLogR + 5;  // strides from 2^kLogShared on cross warps
  constexpr bool kComplement = kComplementLevels<Key, kPos, kLogP>;
  bool complemented = false;  // this lane's keys are complemented (its current level runs descending)
  // A lane of 8 keys sorts them with the 19 compare-exchanges of the optimal 8-key network (Knuth, TAOCP
  // 5.3.4) in place of the network's levels 1 to 3 (24): ascending, on keys complemented where level 3
  // runs descending, which leaves them as those levels would. 65536 rows x 256 on the H100: 0.0737 ->
  // 0.0717 ms (BENCHMARKS.md, issue 18).
  constexpr bool kSortEight = kComplement && kFirstLevel == 1 && kLogR == 3 && kLogP > 3;
  if constexpr (kSortEight) {
    const bool descending = ((g << kLogR) & 8) != 0;
    ComplementIf<Key, kR>(key, descending);
    complemented = descending;
    constexpr int kPairs[19][2] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}, {0, 1}, {2, 3},
                                   {4, 5}, {6, 7}, {2, 4}, {3, 5}, {1, 4}, {3, 6}, {1, 2}, {3, 4}, {5, 6}};
#pragma unroll
    for (int c = 0; c < 19; ++c) {
      const int a = kPairs[c][0], b = kPairs[c][1];
      Order<Key, kPos>(key[a], pos[a], key[b], pos[b], true);
    }
  }
#pragma unroll
  for (int lk = kSortEight ? 4 : kFirstLevel; lk <= kLogP; ++lk) {
    const int k = 1 << lk;
    const bool level_flip = lk == kLogP && flip;
    const bool lane_level = kComplement && lk >= kLogR;  // the direction is the lane's: complemented
    if (lane_level) {
      const bool descending = (((g << kLogR) & k) != 0) != level_flip;
      ComplementIf<Key, kR>(key, descending != complemented);
      complemented = descending;
    }
#pragma unroll
    for (int lj = lk - 1; lj >= 0; --lj) {
      const int j = 1 << lj;
      if (lj < kLogR) {
        if (lane_level) {
          RegisterStep<Key, kPos, kLogR, true>(key, pos, g, k, j, level_flip);
        } else {
          RegisterStep<Key, kPos, kLogR>(key, pos, g, k, j, level_flip);
        }
      } else if (lj < kLogShared) {
        if (lane_level) {
          ShuffleStep<Key, kPos, kLogR, true>(key, pos, g, k, j, level_flip);
        } else {
          ShuffleStep<Key, kPos, kLogR>(key, pos, g, k, j, level_flip);
        }
      } else if constexpr (S::kBlock) {
        // The level's largest strides, lk - 1 down to kLogShared. Each lane writes only its own
        // (blocked) slots before them and reads only those back after them, and every lane has
        // passed the barrier after the previous phase's last step: no barrier before the store.
        if (lj == lk - 1) {
#pragma unroll
          for (int r = 0; r < kR; ++r) {
            const int slot = Swizzle(g * kR + r);
            skey[slot] = key[r];
            if constexpr (kPos) spos[slot] = pos[r];
          }
          __syncthreads();
        }
        SharedStep<Key, kPos, kG, kR>(skey, spos, g, k, lj, level_flip);
        __syncthreads();
        if (lj == kLogShared) {
#pragma unroll
          for (int r = 0; r < kR; ++r) {
            const int slot = Swizzle(g * kR + r);
            key[r] = skey[slot];
            if constexpr (kPos) pos[r] = spos[slot];
          }
        }
      }
    }
  }
  if constexpr (kComplement) ComplementIf<Key, kR>(key, complemented);
}

// How many of the tile at `base` lie below `limit` (at most `stride`).
__device__ __forceinline__ std::uint32_t TileLimit(std::uint64_t base, std::uint64_t stride, std::uint64_t limit) {
  const std::uint64_t left = limit > base ? limit - base : 0;
  return static_cast<std::uint32_t>(left < stride ? left : stride);
}

// Fills the lane's registers with keys g * kR .. g * kR + kR - 1 of the tile (the first `real` are the
// input's, the rest padding). Staged tiles read coalesced (key r * kG + g per lane) into shared memory
// and take the blocked layout from there. Positions: read (merging), or `offset` + the key's index.
template <typename Key, bool kPos, int kLogP, bool kReadPositions>
__device__ __forceinline__ void LoadTile(Key (&key)[Shape<kLogP>::kR], std::uint32_t (&pos)[Shape<kLogP>::kR],
                                         const Key* in, const std::uint32_t* in_pos, std::uint32_t real,
                                         std::uint32_t offset, Key* skey, std::uint32_t* spos, int g) {
  using S = Shape<kLogP>;
  constexpr int kG = S::kG, kR = S::kR;
  constexpr Key kPadding = static_cast<Key>(~Key{0});
  if constexpr (S::kStaged) {
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const std::uint32_t m = static_cast<std::uint32_t>(r * kG + g);
      skey[Swizzle(static_cast<int>(m))] = m < real ? in[m] : kPadding;
      if constexpr (kPos && kReadPositions) spos[Swizzle(static_cast<int>(m))] = m < real ? in_pos[m] : kPaddingPosition;
    }
    TileBarrier<S::kBlock>();
  }
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    const std::uint32_t e = static_cast<std::uint32_t>(g * kR + r);
    if constexpr (S::kStaged) {
      key[r] = skey[Swizzle(static_cast<int>(e))];
    } else {
      key[r] = e < real ? in[e] : kPadding;
    }
    if constexpr (kPos) {
      if constexpr (!kReadPositions) {
        pos[r] = e < real ? offset + e : kPaddingPosition;
      } else if constexpr (S::kStaged) {
        pos[r] = spos[Swizzle(static_cast<int>(e))];
      } else {
        pos[r] = e < real ? in_pos[e] : kPaddingPosition;
      }
    }
  }
}

// Writes the first `written` keys of the tile (and positions) back; staged tiles transpose through
// shared memory first so that the global stores are coalesced.
template <typename Key, bool kPos, int kLogP>
__device__ __forceinline__ void StoreTile(const Key (&key)[Shape<kLogP>::kR],
                                          const std::uint32_t (&pos)[Shape<kLogP>::kR], Key* out,
                                          std::uint32_t* out_pos, std::uint32_t written, Key* skey,
                                          std::uint32_t* spos, int g) {
  using S = Shape<kLogP>;
  constexpr int kG = S::kG, kR = S::kR;
  if constexpr (S::kStaged) {
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const int slot = Swizzle(g * kR + r);
      skey[slot] = key[r];
      if constexpr (kPos) spos[slot] = pos[r];
    }
    TileBarrier<S::kBlock>();
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const std::uint32_t m = static_cast<std::uint32_t>(r * kG + g);
      if (m < written) {
        out[m] = skey[Swizzle(static_cast<int>(m))];
        if constexpr (kPos) out_pos[m] = spos[Swizzle(static_cast<int>(m))];
      }
    }
  } else {
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const std::uint32_t e = static_cast<std::uint32_t>(g * kR + r);
      if (e < written) {
        out[e] = key[r];
        if constexpr (kPos) out_pos[e] = pos[r];
      }
    }
  }
}

// Whole tiles (TileJob::whole_tiles) of one warp at most: a lane's kR keys, and positions, lie contiguous
// in the blocked layout, so it reads and writes them as 16-byte vectors, with no bounds to test and no
// trip through shared memory. 65536 rows x 256 on the H100: 0.0864 -> 0.0737 ms; the network's ALU work
// was sharing the pipe with the staging's address arithmetic and the bounds' compares and selects.
template <typename Key, bool kPos, int kLogP>
inline constexpr bool kVectorLanes = !Shape<kLogP>::kBlock && (Shape<kLogP>::kR * sizeof(Key)) % 16 == 0 &&
                                     (!kPos || (Shape<kLogP>::kR * sizeof(std::uint32_t)) % 16 == 0);

template <typename T, int kN>
__device__ __forceinline__ void LoadVectors(T (&v)[kN], const T* from) {
  constexpr int kPer = 16 / sizeof(T);
  static_assert(kN % kPer == 0, "whole 16-byte vectors");
  const uint4* src = reinterpret_cast<const uint4*>(from);
#pragma unroll
  for (int i = 0; i < kN / kPer; ++i) {
    const uint4 x = src[i];
    memcpy(&v[i * kPer], &x, 16);
  }
}

template <typename T, int kN>
__device__ __forceinline__ void StoreVectors(const T (&v)[kN], T* to) {
  constexpr int kPer = 16 / sizeof(T);
  static_assert(kN % kPer == 0, "whole 16-byte vectors");
  uint4* dst = reinterpret_cast<uint4*>(to);
#pragma unroll
  for (int i = 0; i < kN / kPer; ++i) {
    uint4 x;
    memcpy(&x, &v[i * kPer], 16);
    dst[i] = x;
  }
}

// A whole tile's lane g: its keys from `from` (padding for a lane of no tile, which still takes part in
// the shuffles), its positions made up from the index.
template <typename Key, bool kPos, int kR>
__device__ __forceinline__ void LoadWholeLane(Key (&key)[kR], std::uint32_t (&pos)[kR], const Key* from, bool live,
                                              std::uint32_t offset, int g) {
  if (live) {
    LoadVectors(key, from);
  } else {
#pragma unroll
    for (int r = 0; r < kR; ++r) key[r] = static_cast<Key>(~Key{0});
  }
  if constexpr (kPos) {
#pragma unroll
    for (int r = 0; r < kR; ++r) pos[r] = offset + static_cast<std::uint32_t>(g * kR + r);
  }
}

template <typename Key, bool kPos, int kR>
__device__ __forceinline__ void StoreWholeLane(const Key (&key)[kR], const std::uint32_t (&pos)[kR], Key* to,
                                               std::uint32_t* to_pos) {
  StoreVectors(key, to);
  if constexpr (kPos) StoreVectors(pos, to_pos);
}

// Sorts (or, kMergeOnly, merges) tiles of 2^kLogP keys. Positions are made up from the index when
// sorting, and read from in_pos when merging (they were written by an earlier pass).
//
// Shared memory: a lane's striped slots (r * kG + g) are written in LoadTile and read in StoreTile by
// that lane alone, its blocked slots (g * kR + r) are read in LoadTile and written in StoreTile (and
// around the network's shared phases) by that lane alone, and every other access sits between two
// barriers.
template <typename Key, bool kPos, int kLogP, bool kMergeOnly>
__global__ void __launch_bounds__(Shape<kLogP>::kThreads)
    TileKernel(const Key* in, const std::uint32_t* in_pos, Key* out, std::uint32_t* out_pos, TileJob job) {
  using S = Shape<kLogP>;
  constexpr int kG = S::kG, kR = S::kR;
  __shared__ Key shared_keys[S::kSharedKeys];
  __shared__ std::uint32_t shared_positions[kPos ? S::kSharedKeys : 1];
  const int g = static_cast<int>(threadIdx.x) % kG;
  const int slot = static_cast<int>(threadIdx.x) / kG;  // which of the block's tiles
  Key* skey = shared_keys + (S::kStaged ? slot * S::kP : 0);
  std::uint32_t* spos = shared_positions + (kPos && S::kStaged ? slot * S::kP : 0);
  // One group of tiles per block (a grid of up to 2^31 - 1 blocks covers any count): a loop over tiles
  // would let the compiler hoist every shared address out of it, and hold them all in registers.
  const std::uint64_t t = std::uint64_t{blockIdx.x} * S::kTilesPerBlock + static_cast<std::uint64_t>(slot);
  const bool live = t < job.tiles;
  // This tile's real keys and written keys are its first `real` and `written` (32-bit from here on).
  std::uint64_t base = 0;
  std::uint32_t real = 0, written = 0;
  if (live && job.segment_ids != nullptr) {
    const std::uint32_t s = job.segment_ids[t];
    base = static_cast<std::uint64_t>(job.segment_offsets[s]);
    real = written = static_cast<std::uint32_t>(static_cast<std::uint64_t>(job.segment_offsets[s + 1]) - base);
  } else if (live) {
    base = t * job.stride;
    real = TileLimit(base, job.stride, job.in_limit);
    written = TileLimit(base, job.stride, job.out_limit);
  }
  const std::uint32_t offset = job.row_positions ? 0u : static_cast<std::uint32_t>(base);
  Key key[kR];
  std::uint32_t pos[kR];
  constexpr bool kMayVector = kVectorLanes<Key, kPos, kLogP> && !kMergeOnly;
  const bool vectors = kMayVector && job.whole_tiles;  // the same for every lane of the launch
  const std::uint64_t lane_base = base + static_cast<std::uint64_t>(g) * kR;
  if (vectors) {
    if constexpr (kMayVector) LoadWholeLane<Key, kPos, kR>(key, pos, in + lane_base, live, offset, g);
  } else {
    LoadTile<Key, kPos, kLogP, kMergeOnly>(key, pos, in + base, kMergeOnly && kPos ? in_pos + base : nullptr, real,
                                          offset, skey, spos, g);
  }
  Network<Key, kPos, kLogP, kMergeOnly ? kLogP : 1>(key, pos, skey, spos, g, live && (t & job.flip_mask) != 0);
  if (vectors) {
    if constexpr (kMayVector) {
      if (live) StoreWholeLane<Key, kPos, kR>(key, pos, out + lane_base, kPos ? out_pos + lane_base : nullptr);
    }
  } else {
    StoreTile<Key, kPos, kLogP>(key, pos, out + base, kPos ? out_pos + base : nullptr, written, skey, spos, g);
  }
}

}  // namespace gpusort::kernels::bitonic
