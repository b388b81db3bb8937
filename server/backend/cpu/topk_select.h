// Top-k selection within one row, on the calling thread. A row element is ranked by
// (ToOrderedBits(key) ^ mask, position): mask = OrderMask(largest) ^ the key type's bias (engine_key.h),
// so "best" is always "smallest pair", and the position breaks ties toward the earlier element as the
// proto requires.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "server/backend/cpu/radix_sort.h"
#include "server/backend/cpu/unaligned.h"
#include "server/core/key_order.h"

namespace gpusort::cpu::topk {

template <typename U, typename I>
struct Candidate {
  U key;  // ToOrderedBits(key) ^ mask
  I pos;  // position in the row
  friend bool operator<(const Candidate& a, const Candidate& b) {
    return a.key != b.key ? a.key < b.key : a.pos < b.pos;
  }
};

// From this row length on, a sorted selection of most of the row uses the radix sort.
inline constexpr std::size_t kRadixRowMin = 4096;

// k <= m / kSmallKRatio counts as a small k: it is found by filtering (below) in one read of the row.
inline constexpr std::size_t kSmallKRatio = 8;

template <typename T>
OrderedBitsType<T> RankedKey(const std::byte* row, std::size_t i, OrderedBitsType<T> mask) {
  return ToOrderedBits(LoadAt<T>(row, i)) ^ mask;
}

// Appends to `out` the min(k, end - begin) best elements of row positions [begin, end), in no
// particular order. Candidates gather in `buf`; whenever it holds 2k (at least k + 64), it is cut to
// its k best, whose worst key is then the bar a later element must beat (strictly: a later element
// with the same key loses the tie). One compare per element once the bar is set.
template <typename T, typename I>
void FilterBest(const std::byte* row, std::size_t begin, std::size_t end, std::size_t k,
                OrderedBitsType<T> mask, std::vector<Candidate<OrderedBitsType<T>, I>>& buf,
                std::vector<Candidate<OrderedBitsType<T>, I>>& out) {
  using U = OrderedBitsType<T>;
  const std::size_t keep = std::min(k, end - begin);
  if (keep == 0) return;
  const std::size_t cap = std::max(2 * keep, keep + 64);
  buf.clear();
  buf.reserve(cap);
  bool have_bar = false;
  U bar = 0;
  for (std::size_t i = begin; i < end; ++i) {
    const U u = RankedKey<T>(row, i, mask);
    if (have_bar && u >= bar) continue;
    buf.push_back({u, static_cast<I>(i)});
    if (buf.size() == cap) {
      std::nth_element(buf.begin(), buf.begin() + (keep - 1), buf.end());
      buf.resize(keep);
      bar = buf[keep - 1].key;  // the largest of the kept (nth_element puts it at keep - 1)
      have_bar = true;
    }
  }
  if (buf.size() > keep) std::nth_element(buf.begin(), buf.begin() + (keep - 1), buf.end());
  out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(std::min(keep, buf.size())));
}

// Leaves the k best candidates first (k <= size), in rank order when `sorted`.
template <typename C>
void KeepBest(std::vector<C>& c, std::size_t k, bool sorted) {
  if (c.size() > k) std::nth_element(c.begin(), c.begin() + (k - 1), c.end());
  if (sorted) std::sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(k));
}

// Writes result r = 0..count-1 of a row from the position pos(r).
template <typename T, typename PosOf>
void WriteResults(const std::byte* row, std::size_t begin, std::size_t end, PosOf pos_of,
                  std::byte* values_out, int64_t* indices_out) {
  for (std::size_t r = begin; r < end; ++r) {
    const std::size_t pos = pos_of(r);
    if (values_out != nullptr) StoreAt<T>(values_out, r, LoadAt<T>(row, pos));
    if (indices_out != nullptr) indices_out[r] = static_cast<int64_t>(pos);
  }
}

// Reused buffers of one thread.
template <typename U, typename I>
struct RowScratch {
  std::vector<Candidate<U, I>> candidates, filter;
  std::vector<I> order;
};

// Top-k of one row of m keys (1 <= k <= m) on the calling thread. values_out / indices_out (k entries
// each) may be null when not wanted.
template <typename T, typename I>
void SelectRow(const std::byte* row, std::size_t m, std::size_t k, OrderedBitsType<T> mask, bool sorted,
               std::byte* values_out, int64_t* indices_out,
               RowScratch<OrderedBitsType<T>, I>& scratch) {
  using U = OrderedBitsType<T>;
  if (k == 1) {  // one scan: strictly better only, so the earliest of equal keys stays
    std::size_t best = 0;
    U best_key = RankedKey<T>(row, 0, mask);
    for (std::size_t i = 1; i < m; ++i) {
      const U u = RankedKey<T>(row, i, mask);
      if (u < best_key) best_key = u, best = i;
    }
    WriteResults<T>(row, 0, 1, [&](std::size_t) { return best; }, values_out, indices_out);
    return;
  }
  auto& cands = scratch.candidates;
  cands.clear();
  if (k <= m / kSmallKRatio) {
    FilterBest<T, I>(row, 0, m, k, mask, scratch.filter, cands);
  } else if (sorted && m >= kRadixRowMin) {  // most of a long row, in order: a stable radix argsort
    scratch.order.resize(m);
    (void)radix::Order<T>(m, row, mask, radix::PermutationTo<I>(scratch.order.data()),
                          /*threads=*/1, /*cancel=*/nullptr);
    WriteResults<T>(row, 0, k, [&](std::size_t r) { return scratch.order[r]; }, values_out,
                    indices_out);
    return;
  } else {
    cands.resize(m);
    for (std::size_t i = 0; i < m; ++i) cands[i] = {RankedKey<T>(row, i, mask), static_cast<I>(i)};
  }
  KeepBest(cands, k, sorted);
  WriteResults<T>(row, 0, k, [&](std::size_t r) { return cands[r].pos; }, values_out, indices_out);
}

}  // namespace gpusort::cpu::topk
