#include "server/backend/cpu/run_merge.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include <tbb/task_arena.h>

#include "server/backend/cpu/parallel.h"
#include "server/core/key_order.h"

namespace gpusort::cpu {
namespace {

// Below this many elements a merge runs as one slice on the calling thread.
constexpr std::size_t kParallelMergeMinElements = std::size_t{1} << 20;

// Bytes of payload per element known at compile time (0: none, 8: an index), or -1: read at run time.
template <typename T, int kPayloadWidth>
class Merger {
  using U = OrderedBitsType<T>;

 public:
  Merger(const SortedRuns& runs, const MergeTarget& out)
      : runs_(runs),
        out_(out),
        payload_width_(kPayloadWidth >= 0 ? static_cast<std::size_t>(kPayloadWidth) : runs.payload_width),
        run_count_(runs.bounds.size() - 1) {}

  void Run(int threads) {
    const std::size_t n = runs_.bounds.back();
    const std::size_t slices =
        n < kParallelMergeMinElements ? 1 : std::max<std::size_t>(1, static_cast<std::size_t>(threads) * 4);
    // splits[j * R + r]: elements of run r before slice j. Slice 0 starts at each run's start, the last
    // ends at each run's end.
    std::vector<std::size_t> splits((slices + 1) * run_count_);
    for (std::size_t r = 0; r < run_count_; ++r) {
      splits[r] = runs_.bounds[r];
      splits[slices * run_count_ + r] = runs_.bounds[r + 1];
    }
    ForEachChunk(slices - 1, [&](std::size_t j) { Split(ChunkBegin(n, slices, j + 1), &splits[(j + 1) * run_count_]); });
    if (!Consistent(splits, slices)) {
      // Only runs that are not sorted (memory written by its owner meanwhile) get here: merge them as
      // one slice, which needs no split and stays inside the arrays whatever their contents.
      splits.assign(2 * run_count_, 0);
      for (std::size_t r = 0; r < run_count_; ++r) {
        splits[r] = runs_.bounds[r];
        splits[run_count_ + r] = runs_.bounds[r + 1];
      }
      MergeSlice(&splits[0], &splits[run_count_], 0);
      return;
    }
    ForEachChunk(slices, [&](std::size_t j) {
      MergeSlice(&splits[j * run_count_], &splits[(j + 1) * run_count_], ChunkBegin(n, slices, j));
    });
  }

 private:
  U Bits(std::size_t i) const {
    T key;
    std::memcpy(&key, runs_.keys.data() + i * sizeof(T), sizeof(T));
    return ToSortBits(key, runs_.descending);
  }

  // Elements of run r whose bits are below v, or at most v.
  std::size_t CountBelow(std::size_t r, U v, bool or_equal) const {
    std::size_t lo = runs_.bounds[r], hi = runs_.bounds[r + 1];
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      const U b = Bits(mid);
      if (b < v || (or_equal && b == v)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo - runs_.bounds[r];
  }

  std::size_t CountAll(U v, bool or_equal) const {
    std::size_t total = 0;
    for (std::size_t r = 0; r < run_count_; ++r) total += CountBelow(r, v, or_equal);
    return total;
  }

  // Where output position p falls in each run (`at[r]`, an element offset): every element before it
  // ranks before every element after it, keys equal to the one at p taken from earlier runs first.
  void Split(std::size_t p, std::size_t* at) const {
    U lo = 0, hi = static_cast<U>(~U{0});
    while (lo < hi) {  // the smallest key v with at least p elements at or below it
      const U mid = static_cast<U>(lo + (hi - lo) / 2);
      if (CountAll(mid, true) >= p) {
        hi = mid;
      } else {
        lo = static_cast<U>(mid + 1);
      }
    }
    const std::size_t below = CountAll(lo, false);
    std::size_t need = p > below ? p - below : 0;
    for (std::size_t r = 0; r < run_count_; ++r) {
      const std::size_t lt = CountBelow(r, lo, false), le = CountBelow(r, lo, true);
      const std::size_t take = std::min(le > lt ? le - lt : 0, need);
      need -= take;
      at[r] = runs_.bounds[r] + lt + take;
    }
  }

  // Every slice takes a part of each run that does not shrink, and as many elements as it writes.
  bool Consistent(const std::vector<std::size_t>& splits, std::size_t slices) const {
    const std::size_t n = runs_.bounds.back();
    for (std::size_t j = 0; j < slices; ++j) {
      std::size_t taken = 0;
      for (std::size_t r = 0; r < run_count_; ++r) {
        const std::size_t b = splits[j * run_count_ + r], e = splits[(j + 1) * run_count_ + r];
        if (e < b || b < runs_.bounds[r] || e > runs_.bounds[r + 1]) return false;
        taken += e - b;
      }
      if (taken != ChunkBegin(n, slices, j + 1) - ChunkBegin(n, slices, j)) return false;
    }
    return true;
  }

  void Emit(std::size_t from, std::size_t to) const {
    std::memcpy(out_.keys.data() + to * sizeof(T), runs_.keys.data() + from * sizeof(T), sizeof(T));
    if constexpr (kPayloadWidth != 0) {
      const std::size_t w = kPayloadWidth > 0 ? static_cast<std::size_t>(kPayloadWidth) : payload_width_;
      std::memcpy(out_.payload.data() + to * w, runs_.payload.data() + from * w, w);
    }
  }

  // Merges [begin[r], end[r]) of every run into the output from position `to`.
  void MergeSlice(const std::size_t* begin, const std::size_t* end, std::size_t to) const {
    std::vector<std::size_t> at(begin, begin + run_count_);
    std::vector<std::size_t> live;  // runs with elements left in this slice, in run order
    for (std::size_t r = 0; r < run_count_; ++r) {
      if (at[r] < end[r]) live.push_back(r);
    }
    if (live.size() == 2) {
      std::size_t a = at[live[0]], b = at[live[1]];
      const std::size_t ae = end[live[0]], be = end[live[1]];
      // Branch-free: on random keys the choice is a coin toss, which a branch mispredicts half the time.
      while (a < ae && b < be) {
        const bool take_b = Bits(b) < Bits(a);  // ties take the earlier run's key: stable
        Emit(take_b ? b : a, to++);
        b += take_b;
        a += !take_b;
      }
      while (a < ae) Emit(a++, to++);
      while (b < be) Emit(b++, to++);
      return;
    }
    if (live.size() <= 1) {
      for (const std::size_t r : live) {
        for (std::size_t i = at[r]; i < end[r]; ++i) Emit(i, to++);
      }
      return;
    }
    // A min-heap of (key bits, run): equal keys leave in run order.
    std::vector<std::pair<U, std::size_t>> heap;
    for (const std::size_t r : live) heap.emplace_back(Bits(at[r]), r);
    const auto after = [](const std::pair<U, std::size_t>& x, const std::pair<U, std::size_t>& y) { return x > y; };
    std::make_heap(heap.begin(), heap.end(), after);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), after);
      const std::size_t r = heap.back().second;
      Emit(at[r]++, to++);
      if (at[r] < end[r]) {
        heap.back().first = Bits(at[r]);
        std::push_heap(heap.begin(), heap.end(), after);
      } else {
        heap.pop_back();
      }
    }
  }

  const SortedRuns& runs_;
  const MergeTarget& out_;
  const std::size_t payload_width_;
  const std::size_t run_count_;
};

template <typename T>
void MergeTyped(const SortedRuns& runs, const MergeTarget& out, int threads) {
  switch (runs.payload_width) {
    case 0:
      Merger<T, 0>(runs, out).Run(threads);
      return;
    case 8:
      Merger<T, 8>(runs, out).Run(threads);
      return;
    default:
      Merger<T, -1>(runs, out).Run(threads);
  }
}

}  // namespace

void MergeSortedRuns(const SortedRuns& runs, const MergeTarget& out, int threads) {
  if (runs.bounds.size() < 2 || runs.bounds.back() == 0) return;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  tbb::task_arena arena(threads);
  arena.execute([&] { VisitDType(runs.dtype, [&](auto tag) { MergeTyped<decltype(tag)>(runs, out, threads); }); });
}

std::uint64_t RankBits(DType dtype, const std::byte* key, bool descending) {
  return VisitDType(dtype, [&](auto tag) -> std::uint64_t {
    using T = decltype(tag);
    T k;
    std::memcpy(&k, key, sizeof(T));
    return ToSortBits(k, descending);
  });
}

}  // namespace gpusort::cpu
