// Device side of RADIX_SELECT top-k (kernels/top_k.h; the host side and the plan are in
// top_k_radix_select.cu, which says why the selection runs this way).
//
// Every row of a batch keeps a RowState in temp. The selection is an interval refinement: items whose
// key is below `lo` are taken, items above `hi` are not, items in [lo, hi] are undecided and `k_rem` of
// them must still be taken. Once lo == hi the undecided items are the equals of the k-th key and the
// interval moves to their positions, [plo, phi] (positions below plo taken, above phi not), which is the
// tie rule: among equal keys the earliest positions win. A pass histograms the undecided items into at
// most 2^11 equal-width buckets of the interval and keeps the bucket that holds the k_rem-th one, so the
// interval's width loses 11 bits a pass (3 key passes for 32-bit keys, 6 for 64-bit, then up to 3 over
// 31-bit positions). The row is done when k_rem is 0 or equals the undecided count: then every
// undecided item is taken, or none, and the gather needs no ordering at all (atomic appends).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "top_k_radix_select_visit.cuh"

namespace gpusort::kernels::radix_select {

inline constexpr int kDigitBits = 11;
inline constexpr int kBins = 1 << kDigitBits;
inline constexpr int kThreads = 256;          // filter, pass and gather blocks
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kSamples = 16384;        // keys the sample kernel reads per row
inline constexpr int kSampleThreads = 1024;
inline constexpr int kSamplesPerThread = kSamples / kSampleThreads;

struct RowState {
  unsigned long long lo;         // undecided keys are [lo, hi]; keys below lo are taken
  unsigned long long hi;
  unsigned long long threshold;  // the sampled threshold T (fast path)
  unsigned long long cand_min;   // the least key <= T (fast path)
  std::uint32_t plo;             // when lo == hi: undecided positions among keys == lo
  std::uint32_t phi;
  std::uint32_t k_rem;           // undecided items still to take
  std::uint32_t undecided;       // how many items are undecided
  std::uint32_t done;            // k_rem is 0 or `undecided`: the gather needs nothing more
  std::uint32_t from_candidates; // the candidate buffer holds every item that may be taken
  std::uint32_t cand_count;      // candidates appended (may exceed the buffer's capacity)
  std::uint32_t le_count;        // keys <= T, appended or not (ties past a warp's cap are not)
  std::uint32_t blocks_done;     // last-block ticket of the kernel running now
  std::uint32_t taken;           // the gather's append counter
};

// One batch of rows: row r of the batch is blockIdx.y in the kernels that give a row one or more blocks
// (filter, pass, gather) and blockIdx.x in those that give it exactly one (init, sample, block sort).
template <typename Key>
struct Job {
  const Key* keys = nullptr;        // the batch's first row
  std::uint32_t row_length = 0;
  std::uint32_t k = 0;
  RowState* states = nullptr;
  std::uint32_t* hists = nullptr;   // kBins a row; null when every row has one block
  Key* cand_keys = nullptr;         // `capacity` a row (fast path)
  std::uint32_t* cand_pos = nullptr;
  std::uint32_t capacity = 0;
  std::uint32_t sample_rank = 0;    // 1-based rank of the sample taken as T
  std::uint32_t tie_cap = 0xFFFFFFFFu;  // keys == T a filter warp appends (its earliest); all: no cap
  Key* out_keys = nullptr;          // k a row
  std::int64_t* out_pos = nullptr;
  KeyDecode<Key> decode;            // keys -> ordered bits as read (raw keys); zero: they already are
};

template <typename Key>
__device__ __forceinline__ Key MaxKey() {
  return static_cast<Key>(~Key{0});
}

// Programmatic dependent launch (sm_90), as in merge_sort.cu: wait for the previous grid's writes; let
// the next grid's blocks be placed early. No-ops for a grid launched in plain stream order.
__device__ __forceinline__ void WaitForPreviousGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void LetNextGridLaunch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Bucket width (as a shift) that splits an interval of width w (hi - lo) into at most kBins buckets.
__device__ __forceinline__ int ShiftFor(unsigned long long w) {
  const int bits = 64 - __clzll(w);
  return bits > kDigitBits ? bits - kDigitBits : 0;
}

// True in every thread of the one block of the grid's row that arrives last (blocks_done counts them
// and is reset for the next kernel); its reads then see every other block's writes.
__device__ __forceinline__ bool IsLastBlock(std::uint32_t* blocks_done) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(blocks_done, 1u) == gridDim.x - 1;
    if (last) *blocks_done = 0;
  }
  __syncthreads();
  if (last) __threadfence();
  return last;
}

template <typename Key>
__device__ __forceinline__ void InitState(RowState& st, std::uint32_t n, std::uint32_t k) {
  st.lo = 0;
  st.hi = MaxKey<Key>();
  st.threshold = MaxKey<Key>();
  st.cand_min = MaxKey<Key>();
  st.plo = 0;
  st.phi = n - 1;
  st.k_rem = k;
  st.undecided = n;
  st.done = k == n;
  st.from_candidates = 0;
  st.cand_count = 0;
  st.le_count = 0;
  st.blocks_done = 0;
  st.taken = 0;
}

__device__ __forceinline__ void ZeroHistogram(std::uint32_t* hists, std::uint32_t row) {
  if (hists == nullptr) return;
  for (int i = threadIdx.x; i < kBins; i += blockDim.x) hists[static_cast<std::size_t>(row) * kBins + i] = 0;
}

// Direct path: every row starts with all of its keys undecided. One block a row (blockIdx.x).
template <typename Key>
__global__ void __launch_bounds__(kThreads) InitKernel(Job<Key> job) {
  WaitForPreviousGrid();
  LetNextGridLaunch();
  if (threadIdx.x == 0) InitState<Key>(job.states[blockIdx.x], job.row_length, job.k);
  ZeroHistogram(job.hists, blockIdx.x);
}

// Fast path, step 1 (one block a row, blockIdx.x): T = the sample_rank-th smallest of kSamples keys
// read at evenly spaced positions, found by four (eight) 8-bit digit passes over the samples held in
// registers.
template <typename Key>
__global__ void __launch_bounds__(kSampleThreads) SampleKernel(Job<Key> job) {
  WaitForPreviousGrid();
  LetNextGridLaunch();
  __shared__ std::uint32_t hist[256];
  __shared__ Key chosen_prefix;
  __shared__ std::uint32_t chosen_rem;
  const std::uint32_t n = job.row_length;
  const Key* row = job.keys + static_cast<std::size_t>(blockIdx.x) * n;
  RowState& st = job.states[blockIdx.x];
  if (threadIdx.x == 0) InitState<Key>(st, n, job.k);
  ZeroHistogram(job.hists, blockIdx.x);
  Key samples[kSamplesPerThread];
#pragma unroll
  for (int j = 0; j < kSamplesPerThread; ++j) {
    const unsigned long long i = threadIdx.x + j * kSampleThreads;
    samples[j] = job.decode(row[(2 * i + 1) * n / (2 * kSamples)]);
  }
  Key prefix = 0, mask = 0;
  std::uint32_t rem = job.sample_rank;
  for (int shift = static_cast<int>(sizeof(Key)) * 8 - 8; shift >= 0; shift -= 8) {
    if (threadIdx.x < 256) hist[threadIdx.x] = 0;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kSamplesPerThread; ++j) {
      if ((samples[j] & mask) == prefix) atomicAdd(&hist[(samples[j] >> shift) & 255], 1u);
    }
    __syncthreads();
    if (threadIdx.x < 32) {  // warp 0: lane l owns bins [8l, 8l + 8)
      const std::uint32_t lane = threadIdx.x;
      std::uint32_t sum = 0;
#pragma unroll
      for (int b = 0; b < 8; ++b) sum += hist[lane * 8 + b];
      std::uint32_t inclusive = sum;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const std::uint32_t other = __shfl_up_sync(0xFFFFFFFFu, inclusive, d);
        if (lane >= static_cast<std::uint32_t>(d)) inclusive += other;
      }
      std::uint32_t before = inclusive - sum;
#pragma unroll
      for (int b = 0; b < 8; ++b) {
        const std::uint32_t c = hist[lane * 8 + b];
        if (before < rem && before + c >= rem) {
          chosen_prefix = prefix | (static_cast<Key>(lane * 8 + b) << shift);
          chosen_rem = rem - before;
        }
        before += c;
      }
    }
    __syncthreads();
    prefix = chosen_prefix;
    rem = chosen_rem;
    mask |= static_cast<Key>(255) << shift;
  }
  if (threadIdx.x == 0) st.threshold = prefix;
}

// Fast path, step 2 (grid: blocks x rows): one read of the row appends every key below T with its
// position to the row's candidate buffer, and of the keys equal to T each warp's earliest `tie_cap`;
// it counts every key <= T (also past the capacity) and finds their least key. The row's last block
// then starts the selection: on the candidates when they hold at least k and all fit; otherwise on the
// row itself, from what the count tells (fewer than k: all of them are taken and the k-th key is above
// T; too many: the k-th key is in [least, T]).
//
// Why the tie cap is exact: the answer holds the earliest (k - keys below T) of the keys equal to T, at
// most k of them, and those are among the union of every warp's own earliest k (each warp visits its
// part of the row in position order). Without it, a k-th key with millions of equals (16-bit keys
// have few distinct values: bfloat16 in [0, 1) has 2^14) overflows the buffer and the passes must
// read the row again and again.
template <typename Key>
__global__ void __launch_bounds__(kThreads) FilterKernel(Job<Key> job) {
  WaitForPreviousGrid();
  LetNextGridLaunch();
  __shared__ Key stage_keys[kWarps][kStage];
  __shared__ std::uint32_t stage_pos[kWarps][kStage];
  const std::uint32_t n = job.row_length, r = blockIdx.y;
  RowState& st = job.states[r];
  const Key threshold = static_cast<Key>(st.threshold);
  const std::uint32_t warp_in_block = threadIdx.x / 32, lane = threadIdx.x & 31;
  WarpAppender<Key, std::uint32_t> append{stage_keys[warp_in_block], stage_pos[warp_in_block], &st.cand_count,
                                          job.cand_keys + static_cast<std::size_t>(r) * job.capacity,
                                          job.cand_pos + static_cast<std::size_t>(r) * job.capacity, job.capacity};
  Key least = MaxKey<Key>();
  std::uint32_t at_most_t = 0;  // this lane's keys <= T
  std::uint32_t ties_seen = 0;  // this warp's keys == T so far, in position order (the same in every lane)
  ForEachRowStep<Key, true>(
      job.keys + static_cast<std::size_t>(r) * n, n, blockIdx.x * kWarps + warp_in_block, gridDim.x * kWarps,
      job.decode, [&](auto& keys, auto& pos, std::uint32_t valid) {
        constexpr int N = std::extent_v<std::remove_reference_t<decltype(keys)>>;
        std::uint32_t take = 0, tie = 0;
#pragma unroll
        for (int j = 0; j < N; ++j) {
          if (((valid >> j) & 1u) && keys[j] <= threshold) {
            if (keys[j] < threshold) {
              take |= 1u << j;
            } else {
              tie |= 1u << j;
            }
            least = keys[j] < least ? keys[j] : least;
          }
        }
        at_most_t += __popc(take) + __popc(tie);
        if (N == 1 || job.tie_cap == 0xFFFFFFFFu) {
          // The head and tail call (one key a lane) comes after the middle of the row though its head is
          // earlier: it is a group of its own and keeps all of its (at most 32) ties.
          take |= tie;
        } else if (ties_seen < job.tie_cap && __any_sync(0xFFFFFFFFu, tie != 0)) {
          // Position order in a step is (vector, lane, element): rank the ties vector by vector.
          constexpr int kPer = N / kVectorsPerLane;
#pragma unroll
          for (int v = 0; v < kVectorsPerLane; ++v) {
            std::uint32_t mine = (tie >> (v * kPer)) & ((1u << kPer) - 1u);
            const std::uint32_t count = __popc(mine);
            std::uint32_t inclusive = count;
#pragma unroll
            for (int d = 1; d < 32; d <<= 1) {
              const std::uint32_t other = __shfl_up_sync(0xFFFFFFFFu, inclusive, d);
              if (lane >= static_cast<std::uint32_t>(d)) inclusive += other;
            }
            const std::uint32_t before = ties_seen + inclusive - count;
            std::uint32_t room = before < job.tie_cap ? job.tie_cap - before : 0;
            while (room != 0 && mine != 0) {
              const std::uint32_t lowest = mine & (0u - mine);
              take |= lowest << (v * kPer);
              mine ^= lowest;
              --room;
            }
            ties_seen += __shfl_sync(0xFFFFFFFFu, inclusive, 31);
          }
        }
        if (__any_sync(0xFFFFFFFFu, take != 0)) append.Append(keys, pos, take);
      });
  append.Flush();
  least = WarpMin(least);
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) at_most_t += __shfl_xor_sync(0xFFFFFFFFu, at_most_t, d);
  if (lane == 0) {
    atomicMin(&st.cand_min, static_cast<unsigned long long>(least));
    atomicAdd(&st.le_count, at_most_t);
  }
  if (!IsLastBlock(&st.blocks_done) || threadIdx.x != 0) return;
  const std::uint32_t at_most = *static_cast<volatile std::uint32_t*>(&st.le_count);
  const std::uint32_t appended = *static_cast<volatile std::uint32_t*>(&st.cand_count);
  const unsigned long long least_key = *static_cast<volatile unsigned long long*>(&st.cand_min);
  const std::uint32_t k = job.k;
  if (at_most < k) {
    st.lo = st.threshold + 1;
    st.hi = MaxKey<Key>();
    st.k_rem = k - at_most;
    st.undecided = n - at_most;
  } else {
    st.lo = least_key;
    st.hi = st.threshold;
    st.k_rem = k;
    st.from_candidates = appended <= job.capacity;
    st.undecided = st.from_candidates ? appended : at_most;
  }
  st.done = st.k_rem == st.undecided;
}

// One refinement pass (grid: blocks x rows; see the top of this file). The row's last block picks the
// bucket, narrows the interval and clears the global histogram for the next pass. A row of one block
// keeps its histogram in shared memory.
template <typename Key>
__global__ void __launch_bounds__(kThreads) PassKernel(Job<Key> job) {
  WaitForPreviousGrid();
  LetNextGridLaunch();
  __shared__ std::uint32_t hist[kBins];
  __shared__ std::uint32_t thread_sums[kThreads];
  const std::uint32_t r = blockIdx.y;
  RowState& st = job.states[r];
  if (st.done) return;
  // Everything this pass needs of the row's state is read here, before any thread can change it: the
  // one thread that narrows the state at the end writes st.k_rem too, and a warp still to read it then
  // would see the new value, find a second crossing bin and narrow the state again, wrongly (as
  // compute-sanitizer synccheck, which runs a block's warps one after another, showed: the top-k lost
  // all but one of its results).
  const unsigned long long lo = st.lo, hi = st.hi;
  const std::uint32_t plo = st.plo, phi = st.phi, k_rem = st.k_rem;
  const bool key_phase = lo < hi;
  const unsigned long long width = key_phase ? hi - lo : phi - plo;
  const int shift = ShiftFor(width);
  const std::uint32_t bins = static_cast<std::uint32_t>(width >> shift) + 1;
  for (std::uint32_t i = threadIdx.x; i < bins; i += kThreads) hist[i] = 0;
  __syncthreads();
  auto count = [&](auto& keys, auto& pos, std::uint32_t valid) {
    constexpr int N = std::extent_v<std::remove_reference_t<decltype(keys)>>;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      if (!((valid >> j) & 1u)) continue;
      const unsigned long long key = keys[j];
      if (key_phase) {
        if (key >= lo && key <= hi) atomicAdd(&hist[(key - lo) >> shift], 1u);
      } else if (key == lo && pos[j] >= plo && pos[j] <= phi) {
        atomicAdd(&hist[(pos[j] - plo) >> shift], 1u);
      }
    }
  };
  const std::uint32_t warp = blockIdx.x * kWarps + threadIdx.x / 32, warps = gridDim.x * kWarps;
  if (st.from_candidates) {
    ForEachCandidateStep(job.cand_keys + static_cast<std::size_t>(r) * job.capacity,
                         job.cand_pos + static_cast<std::size_t>(r) * job.capacity, st.cand_count, warp, warps,
                         count);
  } else {
    ForEachRowStep<Key, false>(job.keys + static_cast<std::size_t>(r) * job.row_length, job.row_length, warp,
                               warps, job.decode, count);
  }
  __syncthreads();
  if (gridDim.x > 1) {
    std::uint32_t* global = job.hists + static_cast<std::size_t>(r) * kBins;
    for (std::uint32_t i = threadIdx.x; i < bins; i += kThreads) {
      if (hist[i] != 0) atomicAdd(&global[i], hist[i]);
    }
    if (!IsLastBlock(&st.blocks_done)) return;
    for (std::uint32_t i = threadIdx.x; i < bins; i += kThreads) {
      hist[i] = __ldcg(&global[i]);
      global[i] = 0;
    }
    __syncthreads();
  }
  // Thread t owns bins [8t, 8t + 8): an exclusive scan of the owners' sums, then the one owner whose
  // bins cross k_rem narrows the state.
  constexpr int kPerThread = kBins / kThreads;
  std::uint32_t sum = 0;
#pragma unroll
  for (int b = 0; b < kPerThread; ++b) {
    const std::uint32_t bin = threadIdx.x * kPerThread + b;
    sum += bin < bins ? hist[bin] : 0;
  }
  thread_sums[threadIdx.x] = sum;
  __syncthreads();
  for (int d = 1; d < kThreads; d <<= 1) {  // Hillis-Steele inclusive scan
    const std::uint32_t other = threadIdx.x >= static_cast<unsigned>(d) ? thread_sums[threadIdx.x - d] : 0;
    __syncthreads();
    thread_sums[threadIdx.x] += other;
    __syncthreads();
  }
  std::uint32_t before = thread_sums[threadIdx.x] - sum;
  for (int b = 0; b < kPerThread; ++b) {
    const std::uint32_t bin = threadIdx.x * kPerThread + b;
    const std::uint32_t c = bin < bins ? hist[bin] : 0;
    if (before < k_rem && before + c >= k_rem) {
      const std::uint32_t new_rem = k_rem - before;
      if (key_phase) {
        const unsigned long long new_lo = lo + (static_cast<unsigned long long>(bin) << shift);
        const unsigned long long room = hi - new_lo, bucket = (1ull << shift) - 1;
        st.lo = new_lo;
        st.hi = new_lo + (room < bucket ? room : bucket);
      } else {
        const std::uint32_t new_plo = plo + (bin << shift);
        const std::uint32_t room = phi - new_plo, bucket = (1u << shift) - 1;
        st.plo = new_plo;
        st.phi = new_plo + (room < bucket ? room : bucket);
      }
      st.k_rem = new_rem;
      st.undecided = c;
      st.done = new_rem == c;
    }
    before += c;
  }
}

// Writes the row's k results, unordered (grid: blocks x rows, or one block a row): everything before
// the undecided items, and the undecided ones too when the state says all of them are taken.
template <typename Key>
__global__ void __launch_bounds__(kThreads) GatherKernel(Job<Key> job) {
  WaitForPreviousGrid();
  LetNextGridLaunch();
  __shared__ Key stage_keys[kWarps][kStage];
  __shared__ std::uint32_t stage_pos[kWarps][kStage];
  const std::uint32_t r = blockIdx.y;
  RowState& st = job.states[r];
  const unsigned long long lo = st.lo, hi = st.hi;
  const std::uint32_t plo = st.plo, phi = st.phi;
  const bool take_undecided = st.k_rem != 0;
  const std::uint32_t warp_in_block = threadIdx.x / 32;
  WarpAppender<Key, std::int64_t> append{stage_keys[warp_in_block], stage_pos[warp_in_block], &st.taken,
                                         job.out_keys + static_cast<std::size_t>(r) * job.k,
                                         job.out_pos + static_cast<std::size_t>(r) * job.k, job.k};
  auto gather = [&](auto& keys, auto& pos, std::uint32_t valid) {
    constexpr int N = std::extent_v<std::remove_reference_t<decltype(keys)>>;
    std::uint32_t take = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const unsigned long long key = keys[j];
      bool taken;
      if (key < lo) {
        taken = true;
      } else if (key > hi) {
        taken = false;
      } else if (lo < hi) {
        taken = take_undecided;
      } else {
        taken = pos[j] < plo || (pos[j] <= phi && take_undecided);
      }
      if (((valid >> j) & 1u) && taken) take |= 1u << j;
    }
    if (__any_sync(0xFFFFFFFFu, take != 0)) append.Append(keys, pos, take);
  };
  const std::uint32_t warp = blockIdx.x * kWarps + warp_in_block, warps = gridDim.x * kWarps;
  if (st.from_candidates) {
    ForEachCandidateStep(job.cand_keys + static_cast<std::size_t>(r) * job.capacity,
                         job.cand_pos + static_cast<std::size_t>(r) * job.capacity, st.cand_count, warp, warps,
                         gather);
  } else {
    ForEachRowStep<Key, false>(job.keys + static_cast<std::size_t>(r) * job.row_length, job.row_length, warp,
                               warps, job.decode, gather);
  }
  append.Flush();
}

// Sorts each row's k results by (key, position) in shared memory with a bitonic network padded to
// `padded` (a power of two, at most kBlockSortMax) with entries that sort after every real one. One block
// a row (blockIdx.x).
inline constexpr std::uint32_t kBlockSortMax = 2048;

template <typename Key>
__global__ void __launch_bounds__(1024) BlockSortKernel(Key* keys, std::int64_t* positions, std::uint32_t k,
                                                        std::uint32_t padded) {
  WaitForPreviousGrid();
  LetNextGridLaunch();
  __shared__ Key shared_keys[kBlockSortMax];
  __shared__ std::uint32_t shared_pos[kBlockSortMax];
  Key* row_keys = keys + static_cast<std::size_t>(blockIdx.x) * k;
  std::int64_t* row_pos = positions + static_cast<std::size_t>(blockIdx.x) * k;
  for (std::uint32_t i = threadIdx.x; i < padded; i += blockDim.x) {
    shared_keys[i] = i < k ? row_keys[i] : MaxKey<Key>();
    shared_pos[i] = i < k ? static_cast<std::uint32_t>(row_pos[i]) : 0xFFFFFFFFu;  // real positions < 2^31
  }
  __syncthreads();
  for (std::uint32_t size = 2; size <= padded; size <<= 1) {
    for (std::uint32_t stride = size / 2; stride > 0; stride >>= 1) {
      for (std::uint32_t i = threadIdx.x; i < padded / 2; i += blockDim.x) {
        const std::uint32_t a = 2 * i - (i & (stride - 1)), b = a + stride;
        const Key ka = shared_keys[a], kb = shared_keys[b];
        const std::uint32_t pa = shared_pos[a], pb = shared_pos[b];
        const bool a_after_b = kb < ka || (kb == ka && pb < pa);
        if (a_after_b == ((a & size) == 0)) {
          shared_keys[a] = kb;
          shared_keys[b] = ka;
          shared_pos[a] = pb;
          shared_pos[b] = pa;
        }
      }
      __syncthreads();
    }
  }
  for (std::uint32_t i = threadIdx.x; i < k; i += blockDim.x) {
    row_keys[i] = shared_keys[i];
    row_pos[i] = shared_pos[i];
  }
}

}  // namespace gpusort::kernels::radix_select
