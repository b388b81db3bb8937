// Test oracles: the plain standard-library answers every backend must match. They sort a copy of the
// *input* (never of a backend's output), so lost or duplicated keys cannot pass.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "server/core/key_order.h"
#include "server/core/spec.h"

namespace gpusort::testing {

// Keys in the service's order (bit patterns kept, so NaN payloads and -0.0 are checked exactly).
template <typename T>
std::vector<T> ReferenceSort(std::vector<T> keys, SortOrder order) {
  if (order == SortOrder::kAscending)
    std::sort(keys.begin(), keys.end(), KeyLess<T>{});
  else
    std::sort(keys.begin(), keys.end(), KeyGreater<T>{});
  return keys;
}

// The stable permutation: position i of the output holds the input index of the i-th key.
template <typename T>
std::vector<int64_t> ReferenceStableArgsort(const std::vector<T>& keys, SortOrder order) {
  std::vector<int64_t> idx(keys.size());
  std::iota(idx.begin(), idx.end(), int64_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
    return order == SortOrder::kAscending ? KeyLess<T>{}(keys[a], keys[b])
                                          : KeyGreater<T>{}(keys[a], keys[b]);
  });
  return idx;
}

// A Sort of segments (SortSpec::segment_offsets: S + 1 offsets) or of `rows` equal rows (SortSpec::rows):
// each sorted alone, and each one's stable permutation counting from its start.
inline std::vector<uint64_t> RowOffsets(std::size_t n, std::size_t rows) {
  std::vector<uint64_t> offsets(rows + 1);
  for (std::size_t r = 0; r <= rows; ++r) offsets[r] = rows == 0 ? 0 : r * (n / rows);
  return offsets;
}
template <typename T>
std::vector<T> ReferenceSegmentSort(const std::vector<T>& keys, const std::vector<uint64_t>& offsets, SortOrder order) {
  std::vector<T> out;
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
    const std::vector<T> segment =
        ReferenceSort(std::vector<T>(keys.begin() + offsets[s], keys.begin() + offsets[s + 1]), order);
    out.insert(out.end(), segment.begin(), segment.end());
  }
  return out;
}
template <typename T>
std::vector<int64_t> ReferenceSegmentStableArgsort(const std::vector<T>& keys, const std::vector<uint64_t>& offsets,
                                                   SortOrder order) {
  std::vector<int64_t> out;
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
    const std::vector<int64_t> segment =
        ReferenceStableArgsort(std::vector<T>(keys.begin() + offsets[s], keys.begin() + offsets[s + 1]), order);
    out.insert(out.end(), segment.begin(), segment.end());
  }
  return out;
}
template <typename T>
std::vector<T> ReferenceRowSort(const std::vector<T>& keys, std::size_t rows, SortOrder order) {
  return ReferenceSegmentSort(keys, RowOffsets(keys.size(), rows), order);
}
template <typename T>
std::vector<int64_t> ReferenceRowStableArgsort(const std::vector<T>& keys, std::size_t rows, SortOrder order) {
  return ReferenceSegmentStableArgsort(keys, RowOffsets(keys.size(), rows), order);
}

// Offsets of segments with lengths drawn from `lengths` in turn (zeros make empty segments), covering n.
inline std::vector<uint64_t> SegmentOffsetsOf(std::size_t n, const std::vector<std::size_t>& lengths) {
  if (n == 0) return {0, 0};
  std::vector<uint64_t> offsets = {0};
  for (std::size_t i = 0; offsets.back() < n; ++i) {
    offsets.push_back(std::min<uint64_t>(n, offsets.back() + lengths[i % lengths.size()]));
  }
  return offsets;
}

template <typename T>
struct TopKAnswer {
  std::vector<T> values;         // each row's (or segment's) results in rank order, one after another
  std::vector<int64_t> indices;  // row- (or segment-) relative
};

// The proto's definition: rank a segment by key (largest or smallest first), equal keys by smaller
// index first, take the first min(k, its length). Computed with std::partial_sort over indices.
template <typename T>
TopKAnswer<T> ReferenceSegmentTopK(const std::vector<T>& keys, const std::vector<uint64_t>& offsets, std::size_t k,
                                   bool largest) {
  TopKAnswer<T> answer;
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
    const T* segment = keys.data() + offsets[s];
    const std::size_t m = offsets[s + 1] - offsets[s], take = std::min(k, m);
    std::vector<int64_t> idx(m);
    std::iota(idx.begin(), idx.end(), int64_t{0});
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(take), idx.end(),
                      [&](int64_t a, int64_t b) {
                        const auto ka = ToOrderedBits(segment[a]), kb = ToOrderedBits(segment[b]);
                        if (ka != kb) return largest ? ka > kb : ka < kb;
                        return a < b;
                      });
    for (std::size_t i = 0; i < take; ++i) {
      answer.values.push_back(segment[idx[i]]);
      answer.indices.push_back(idx[i]);
    }
  }
  return answer;
}

// The same for `rows` equal rows (k at most the row length).
template <typename T>
TopKAnswer<T> ReferenceTopK(const std::vector<T>& keys, std::size_t rows, std::size_t k, bool largest) {
  return ReferenceSegmentTopK(keys, RowOffsets(keys.size(), rows), k, largest);
}

// Bitwise equality of key arrays (operator== would call NaN != NaN and -0.0 == +0.0).
template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(),
                    [](T x, T y) { return ToOrderedBits(x) == ToOrderedBits(y); });
}

}  // namespace gpusort::testing
