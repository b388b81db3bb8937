// Merge Path (Odeh, Green, Mwassi, Shmueli, Birk 2012): the k-th output of merging two sorted runs is
// found by one binary search along the k-th cross diagonal, so any number of threads can each merge an
// equal share without looking at the others. Merge sort uses it twice: threads of a block splitting
// runs in shared memory, and blocks splitting runs in global memory.
//
// Both functions merge stably: on equal keys the item of run a (the left one) comes first.
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

// Merges kItems outputs of the stable merge of s[a, a_end) and s[b, b_end), starting where MergePath
// split them, into registers: keys[i] and from[i], the index in s it came from (to move a payload
// with it). Both runs lie in one array s of `size` >= 1 items; reads are clamped to it, so a thread
// whose share runs past both ends reads nothing outside s (its surplus outputs are garbage, for the
// caller to drop).
template <int kItems, typename Key>
__device__ __forceinline__ void SerialMerge(const Key* s, int size, int a, int a_end, int b, int b_end,
                                            Key (&keys)[kItems], int (&from)[kItems]) {
  Key key_a = s[min(a, size - 1)];
  Key key_b = s[min(b, size - 1)];
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const bool take_b = b < b_end && (a >= a_end || key_b < key_a);
    keys[i] = take_b ? key_b : key_a;
    from[i] = min(take_b ? b : a, size - 1);
    // One shared-memory load per output, into whichever run advanced: selects, not branches.
    if (take_b) {
      ++b;
    } else {
      ++a;
    }
    const Key next = s[min(take_b ? b : a, size - 1)];
    key_b = take_b ? next : key_b;
    key_a = take_b ? key_a : next;
  }
}

}  // namespace gpusort::kernels
