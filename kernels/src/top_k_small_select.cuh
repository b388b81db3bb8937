// SMALL_K's device side: one group of threads (a warp, or a block of 128 to 512) selects the best
// min(k, length) (key, position) pairs of one slice of kG * kR entries, held in registers.
//
// 1. Radix select in shared memory: 8-bit digits from the top. A histogram (shared atomics) of the
//    digit over the entries that still match the chosen prefix; one warp scans the 256 bins and finds
//    the bin holding the `need`-th entry. Stops early once that bin holds exactly the entries still
//    needed (typically after the second digit on random keys), else after the last digit, when the
//    prefix is the k-th key itself. At the end: entries below the prefix ("less") are all taken, and of
//    the entries that match it ("equal") the first `need` by position: the tie rule.
// 2. Compaction in position order: entry e = r * kG + t sits in register r of thread t, so position
//    order is (r, warp, lane) order; a ballot per register and warp counts both kinds, one warp scans
//    the counts, and each taken entry lands at (less before it) + min(equal before it, need). The
//    output is in position order, which later levels rely on: there, the list index is the position
//    order, so the same tie rule holds for candidate lists.
// 3. With `sorted` (last level only): a bitonic sort of the k (key, position) pairs in shared memory.
// Every comparison that orders two entries compares (key, position), so equal keys never reorder.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "top_k_levels.h"

namespace gpusort::kernels::small_top_k {

inline constexpr int kDigitBits = 8;
inline constexpr int kBins = 1 << kDigitBits;
inline constexpr int kWarpGroupsPerBlock = 4;  // warp groups: 128 threads a block, no block barriers

__host__ __device__ constexpr int GroupsPerBlock(int group_threads) {
  return group_threads == 32 ? kWarpGroupsPerBlock : 1;
}

// One level's work (see top_k_levels.h): rows * slices groups.
struct SelectJob {
  std::uint64_t rows = 0;
  std::uint32_t length = 0;        // entries per row read
  std::uint64_t in_stride = 0;     // entries between rows of the input
  std::uint32_t slices = 1;        // per row
  std::uint32_t k = 0;
  std::uint32_t sort_size = 0;     // the last level with `sorted`: next power of two >= k, else 0
  bool last = false;               // writes the answer (one slice per row)
  void* out_keys = nullptr;        // last: the answer (null: not asked for); else the candidate list
  std::int64_t* out_positions = nullptr;     // last
  std::uint32_t* candidate_positions = nullptr;  // not last
  std::uint64_t out_stride = 0;    // not last: entries between rows of the candidate list
};

// Shared bytes one group uses: the histogram, the per (register, warp) counts, the chosen bin, and
// the sort buffer.
template <typename Key>
__host__ __device__ constexpr unsigned GroupSharedBytes(int counts, unsigned sort_size) {
  // Rounded to 16 bytes: the next warp group's histogram is read as 16-byte vectors.
  return ((kBins + ((counts + 3) / 4) * 4 + 4) * 4 + sort_size * (sizeof(Key) + 4) + 15) / 16 * 16;
}

template <int kG>
__device__ __forceinline__ void GroupBarrier() {
  if constexpr (kG == 32) {
    __syncwarp();
  } else {
    __syncthreads();
  }
}

template <typename Key>
__device__ __forceinline__ bool Less(Key a, std::uint32_t pa, Key b, std::uint32_t pb) {
  return a < b || (a == b && pa < pb);
}

__device__ __forceinline__ std::uint32_t InclusiveWarpScan(std::uint32_t x, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const std::uint32_t y = __shfl_up_sync(0xFFFFFFFFu, x, d);
    if (lane >= d) x += y;
  }
  return x;
}

// One warp: finds the bin where the running count of hist reaches `need` (1 <= need <= total), and
// writes {bin, entries in the bins below it, entries in it} to result. Zeroes the histogram on the way.
__device__ __forceinline__ void FindBin(std::uint32_t* hist, std::uint32_t need, std::uint32_t* result, int lane) {
  uint4* bins = reinterpret_cast<uint4*>(hist) + lane * 2;
  const uint4 a = bins[0], b = bins[1];
  bins[0] = make_uint4(0, 0, 0, 0);
  bins[1] = make_uint4(0, 0, 0, 0);
  const std::uint32_t c[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  std::uint32_t sum = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) sum += c[j];
  const std::uint32_t inclusive = InclusiveWarpScan(sum, lane);
  const std::uint32_t exclusive = inclusive - sum;
  if (exclusive < need && need <= inclusive) {  // exactly one lane
    std::uint32_t below = exclusive;
    bool found = false;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if (!found && below + c[j] >= need) {
        found = true;
        result[0] = static_cast<std::uint32_t>(lane * 8 + j);
        result[1] = below;
        result[2] = c[j];
      } else if (!found) {
        below += c[j];
      }
    }
  }
}

// One warp: exclusive scan of n counts in place.
template <int kN>
__device__ __forceinline__ void ExclusiveScanCounts(std::uint32_t* counts, int lane) {
  constexpr int kPer = (kN + 31) / 32;
  std::uint32_t mine[kPer];
  std::uint32_t sum = 0;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int at = lane * kPer + i;
    mine[i] = at < kN ? counts[at] : 0;
    sum += mine[i];
  }
  std::uint32_t running = InclusiveWarpScan(sum, lane) - sum;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int at = lane * kPer + i;
    if (at < kN) counts[at] = running;
    running += mine[i];
  }
}

// Sorts n = 2^m (key, position) pairs in shared memory ascending, by the group's kG threads.
template <typename Key, int kG>
__device__ __forceinline__ void BitonicSortShared(Key* keys, std::uint32_t* positions, std::uint32_t n, int t) {
  for (std::uint32_t size = 2; size <= n; size <<= 1) {
    for (std::uint32_t stride = size >> 1; stride > 0; stride >>= 1) {
      for (std::uint32_t q = static_cast<std::uint32_t>(t); q < n / 2; q += kG) {
        const std::uint32_t i = ((q & ~(stride - 1)) << 1) | (q & (stride - 1));
        const std::uint32_t j = i | stride;
        const Key ki = keys[i], kj = keys[j];
        const std::uint32_t pi = positions[i], pj = positions[j];
        const bool ascending = (i & size) == 0;
        // Only padding pairs are equal, and swapping two of those changes nothing.
        if (Less(kj, pj, ki, pi) == ascending) {
          keys[i] = kj;
          keys[j] = ki;
          positions[i] = pj;
          positions[j] = pi;
        }
      }
      GroupBarrier<kG>();
    }
  }
}

// kG threads a group (32: a warp, several groups a block; else the whole block), kR entries each;
// kReadPositions: the input is a candidate list with its positions (levels after the first).
template <typename Key, int kG, int kR, bool kReadPositions>
__global__ void __launch_bounds__(kG * GroupsPerBlock(kG))
    SelectKernel(const Key* __restrict__ in, const std::uint32_t* __restrict__ in_positions, SelectJob job) {
  constexpr int kW = kG / 32;
  constexpr int kTile = kG * kR;
  constexpr int kBits = static_cast<int>(sizeof(Key) * 8);
  constexpr int kCounts = kR * kW;
  static_assert(kR <= 32, "a register's kind is one bit of a 32-bit mask");
  extern __shared__ __align__(16) unsigned char shared[];
  const int t = static_cast<int>(threadIdx.x) % kG;
  const int lane = t & 31, warp = t >> 5;
  const int group_in_block = static_cast<int>(threadIdx.x) / kG;
  const std::uint64_t group = std::uint64_t{blockIdx.x} * GroupsPerBlock(kG) + static_cast<std::uint64_t>(group_in_block);
  if (group >= job.rows * job.slices) return;  // a whole warp group, or the whole block

  unsigned char* mine = shared + group_in_block * GroupSharedBytes<Key>(kCounts, job.sort_size);
  std::uint32_t* hist = reinterpret_cast<std::uint32_t*>(mine);
  std::uint32_t* counts = hist + kBins;
  std::uint32_t* result = counts + ((kCounts + 3) / 4) * 4;
  Key* sort_keys = reinterpret_cast<Key*>(result + 4);
  std::uint32_t* sort_positions = reinterpret_cast<std::uint32_t*>(sort_keys + job.sort_size);

  const std::uint64_t row = group / job.slices;
  const std::uint32_t slice = static_cast<std::uint32_t>(group % job.slices);
  const std::uint32_t start = slice * static_cast<std::uint32_t>(kTile);
  const std::uint32_t rest = job.length - start;
  const std::uint32_t length = rest < kTile ? rest : kTile;
  const std::uint32_t take = job.k < length ? job.k : length;
  const Key* row_in = in + row * job.in_stride + start;

  // Entries past the slice's end are padding: the largest key at a position after every real one, so
  // they rank after all real entries and are never among the take <= length selected (and the select
  // needs no per-entry bounds test: the profile of 16-bit rows showed those tests and the branches
  // around the atomics as much of the issued instructions). A full tile (every slice but a row's
  // last) loads without bounds tests. 16-bit keys are worked on as 32-bit words (no sign-extending
  // conversions in every compare).
  using Word = std::conditional_t<(sizeof(Key) < 4), std::uint32_t, Key>;
  constexpr Word kPad = static_cast<Word>(static_cast<Key>(~Key{0}));
  Word key[kR];
  std::uint32_t position[kReadPositions ? kR : 1];
  const Key* my_in = row_in + t;
  if (length == static_cast<std::uint32_t>(kTile)) {
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      key[r] = my_in[r * kG];
      if constexpr (kReadPositions) position[r] = in_positions[row * job.in_stride + start + r * kG + t];
    }
  } else {
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const std::uint32_t e = static_cast<std::uint32_t>(r * kG + t);
      key[r] = e < length ? static_cast<Word>(my_in[r * kG]) : kPad;
      if constexpr (kReadPositions) {
        position[r] = e < length ? in_positions[row * job.in_stride + start + e] : top_k::kNoPosition;
      }
    }
  }

  // 1. Radix select. lo: the chosen prefix (undecided bits 0); mask: its decided bits. Taking every
  // entry (take == length) needs no select: mask 0 makes every entry "equal", and need = length.
  // Entries that no longer match the prefix count into a spare word (result[3]) instead of branching
  // around the atomic.
  Word lo = 0, mask = 0;
  std::uint32_t need = take;
  if (take < length) {
    for (int i = t; i < kBins; i += kG) hist[i] = 0;
    GroupBarrier<kG>();
    // Unrolled (but for 64-bit keys, whose 8 digits would make the kernel large) so that each digit's
    // shift is a constant: the profile of 16-bit rows showed the bin's address arithmetic with a
    // variable shift as a large part of the issued instructions.
    constexpr int kDigits = kBits / kDigitBits;
    constexpr int kUnroll = sizeof(Key) == 8 ? 1 : kDigits;
#pragma unroll kUnroll
    for (int d = 0; d < kDigits; ++d) {
      const int shift = kBits - kDigitBits * (d + 1);
      if (d == 0) {  // the first digit: every entry counts
#pragma unroll
        for (int r = 0; r < kR; ++r) atomicAdd(&hist[static_cast<std::uint32_t>(key[r] >> shift) & (kBins - 1)], 1u);
      } else {
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          const std::uint32_t bin = static_cast<std::uint32_t>(key[r] >> shift) & (kBins - 1);
          atomicAdd((key[r] & mask) == lo ? &hist[bin] : &result[3], 1u);
        }
      }
      GroupBarrier<kG>();
      if (warp == 0) FindBin(hist, need, result, lane);
      GroupBarrier<kG>();
      const std::uint32_t bin = result[0], below = result[1], in_bin = result[2];
      need -= below;
      lo |= static_cast<Word>(bin) << shift;
      mask |= static_cast<Word>(kBins - 1) << shift;
      if (in_bin == need) break;
    }
  }

  // 2. Compaction in position order. Counts of both kinds share a word: less << 16 | equal (a tile
  // holds at most 8192 entries, so neither half overflows). Most (register, warp) pairs hold nothing
  // taken (k of a tile of 8k or more), and an entry of either kind is a key <= hi (the prefix with its
  // undecided bits set): one compare and one vote per register find the pairs that hold any, and only
  // those pay for the ballots, which the profile of 16-bit rows asked for (ncu: the select was bound
  // by issued instructions, the compaction's per-key tests and ballots a large part).
  const std::uint32_t lanes_before = (1u << lane) - 1u;
  constexpr Word kKeyBits = static_cast<Word>(static_cast<Key>(~Key{0}));
  const Word hi = lo | (static_cast<Word>(~mask) & kKeyBits);
  std::uint32_t warp_regs = 0;  // registers where some lane of this warp holds an entry of either kind
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    std::uint32_t word = 0;
    if (__any_sync(0xFFFFFFFFu, key[r] <= hi)) {
      const std::uint32_t less_bits = __ballot_sync(0xFFFFFFFFu, key[r] < lo);
      const std::uint32_t equal_bits = __ballot_sync(0xFFFFFFFFu, (key[r] & mask) == lo);
      word = (static_cast<std::uint32_t>(__popc(less_bits)) << 16) | __popc(equal_bits);
      warp_regs |= 1u << r;
    }
    if (lane == 0) counts[r * kW + warp] = word;
  }
  GroupBarrier<kG>();
  if (warp == 0) ExclusiveScanCounts<kCounts>(counts, lane);
  GroupBarrier<kG>();
  const bool to_sort = job.sort_size != 0;
  Key* out_keys = static_cast<Key*>(job.out_keys);
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    if (!((warp_regs >> r) & 1u)) continue;  // the same in every lane of the warp
    const bool is_less = key[r] < lo;
    const bool is_equal = (key[r] & mask) == lo;
    const std::uint32_t less_bits = __ballot_sync(0xFFFFFFFFu, is_less);
    const std::uint32_t equal_bits = __ballot_sync(0xFFFFFFFFu, is_equal);
    const std::uint32_t base = counts[r * kW + warp];
    const std::uint32_t less_before = (base >> 16) + __popc(less_bits & lanes_before);
    const std::uint32_t equal_before = (base & 0xFFFFu) + __popc(equal_bits & lanes_before);
    if (is_less || (is_equal && equal_before < need)) {
      const std::uint32_t slot = less_before + (equal_before < need ? equal_before : need);
      std::uint32_t p;
      if constexpr (kReadPositions) {
        p = position[r];
      } else {
        p = start + static_cast<std::uint32_t>(r * kG + t);
      }
      if (to_sort) {
        sort_keys[slot] = static_cast<Key>(key[r]);
        sort_positions[slot] = p;
      } else if (job.last) {
        if (out_keys != nullptr) out_keys[row * job.k + slot] = static_cast<Key>(key[r]);
        if (job.out_positions != nullptr) job.out_positions[row * job.k + slot] = p;
      } else {
        const std::uint64_t at = row * job.out_stride + std::uint64_t{slice} * job.k + slot;
        out_keys[at] = static_cast<Key>(key[r]);
        job.candidate_positions[at] = p;
      }
    }
  }
  if (!to_sort) return;

  // 3. Sort the k (the last level, one slice per row: take == k).
  for (std::uint32_t i = take + static_cast<std::uint32_t>(t); i < job.sort_size; i += kG) {
    sort_keys[i] = static_cast<Key>(~Key{0});
    sort_positions[i] = top_k::kNoPosition;
  }
  GroupBarrier<kG>();
  BitonicSortShared<Key, kG>(sort_keys, sort_positions, job.sort_size, t);
  for (std::uint32_t i = static_cast<std::uint32_t>(t); i < take; i += kG) {
    if (out_keys != nullptr) out_keys[row * job.k + i] = sort_keys[i];
    if (job.out_positions != nullptr) job.out_positions[row * job.k + i] = sort_positions[i];
  }
}

}  // namespace gpusort::kernels::small_top_k
