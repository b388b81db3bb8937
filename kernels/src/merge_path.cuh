// Merge Path (Odeh, Green, Mwassi, Shmueli, Birk 2012): the k-th output of merging two sorted runs is
// found by one binary search along the k-th cross diagonal, so any number of threads can each merge an
// equal share without looking at the others. Merge sort uses it twice: threads of a block splitting
// runs in shared memory, and blocks splitting runs in global memory (there a warp searches together).
//
// All functions merge stably: on equal keys the item of run a (the left one) comes first.
#pragma once

#include <cuda_runtime.h>

namespace gpusort::kernels {

// How many of the first `diag` outputs of the stable merge of sorted a[0, a_len) and b[0, b_len) come
// from a (the rest, diag minus that, come from b). Needs 0 <= diag <= a_len + b_len; reads only inside
// both runs. Index is int for shared memory and std::int64_t for global offsets.
template <typename Index, typename Key>
__device__ __forceinline__ Index MergePath(const Key* a, Index a_len, const Key* b, Index b_len, Index diag) {
  Index lo = diag > b_len ? diag - b_len : Index{0};
  Index hi = diag < a_len ? diag : a_len;
  while (lo < hi) {
    const Index mid = lo + (hi - lo) / 2;
    // a[mid] is among the first diag outputs iff it is not greater than the b item it races against
    // (ties go to a), so the predicate is true then false along the diagonal.
    if (b[diag - 1 - mid] < a[mid]) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// MergePath's answer found by a whole warp (all 32 lanes call it with the same arguments and all get
// the answer): each round the lanes probe 32 evenly spaced points of the remaining range at once and
// keep the one chunk where the predicate turns, so a range of length L takes about log32(L) rounds of
// independent loads instead of log2(L) dependent ones. For searches in global memory, where each
// round costs a memory latency.
template <typename Key>
__device__ __forceinline__ int WarpMergePath(const Key* a, int a_len, const Key* b, int b_len, int diag) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  int lo = diag > b_len ? diag - b_len : 0;
  int hi = diag < a_len ? diag : a_len;
  // The answer is the first i in [lo, hi] where b[diag - 1 - i] < a[i], taken as true at i == hi.
  while (lo < hi) {
    const int step = (hi - lo + 31) / 32;
    const int probe = lo + lane * step + (step - 1);  // the last point of this lane's chunk
    const bool turned = probe >= hi || b[diag - 1 - probe] < a[probe];
    const unsigned ballot = __ballot_sync(0xffffffffu, turned);
    if (ballot == 0) return hi;  // every chunk's last point is before the turn: only hi is left
    const int chunk = __ffs(ballot) - 1;
    // Chunk `chunk` holds the turn: its points before lo + chunk * step are all false.
    const int chunk_last = lo + chunk * step + (step - 1);
    lo += chunk * step;
    hi = chunk_last < hi ? chunk_last : hi;
  }
  return lo;
}

// Merges kItems outputs of the stable merge of s[a, a_end) and s[b, b_end), starting where MergePath
// split them, into registers: keys[i] and from[i], the index in s it came from (to move a payload
// with it). Both runs lie in one array s, a's before b's. Without kClamp every one of the kItems outputs
// must exist (a + b + kItems <= a_end + b_end counted from the split). The merge reads one item ahead of
// each output; a read ahead past b_end is kept at b_end - 1 (its value is never used: b is exhausted
// then). It must not go past: in block sort's warp-synchronous rounds the item after b_end is the next
// warp's, which that warp may be writing at the same moment (compute-sanitizer racecheck reported the
// race, RAW and WAR, on the H100). With kClamp a thread may run past both runs: reads are clamped to
// s[0, size) and its surplus outputs are garbage, for the caller to drop.
template <bool kClamp, int kItems, typename Key>
__device__ __forceinline__ void SerialMerge(const Key* s, int size, int a, int a_end, int b, int b_end,
                                            Key (&keys)[kItems], int (&from)[kItems]) {
  auto at = [&](int i) {
    if constexpr (kClamp) return i < size ? i : size - 1;
    return i < b_end ? i : b_end - 1;
  };
  Key key_a = s[at(a)];
  Key key_b = s[at(b)];
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const bool take_b = b < b_end && (a >= a_end || key_b < key_a);
    keys[i] = take_b ? key_b : key_a;
    from[i] = kClamp ? at(take_b ? b : a) : (take_b ? b : a);
    // One shared-memory load per output, into whichever run advanced: selects, not branches.
    if (take_b) {
      ++b;
    } else {
      ++a;
    }
    const Key next = s[at(take_b ? b : a)];
    key_b = take_b ? next : key_b;
    key_a = take_b ? key_a : next;
  }
}

}  // namespace gpusort::kernels
