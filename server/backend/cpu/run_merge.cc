#include "server/backend/cpu/run_merge.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include <tbb/task_arena.h>

#include "server/backend/cpu/parallel.h"
#include "server/core/key_order.h"
#include "server/core/scratch.h"

namespace gpusort::cpu {
namespace {

// A pair's output is cut into slices of about this many elements (and at least one per pair).
constexpr std::size_t kSliceElements = std::size_t{1} << 20;

// One side of a pass: keys and payload arrays of the whole array.
struct Arrays {
  std::byte* keys;
  std::byte* payload;
};

// One pass's work: pairs of adjacent runs merged from `src` into `dst` at the same positions.
// kPayloadWidth: bytes per element known at compile time (0: none, 8: an index), or -1: `width`.
template <typename T, int kPayloadWidth>
class Pass {
  using U = OrderedBitsType<T>;

 public:
  Pass(bool descending, std::size_t width, Arrays src, Arrays dst)
      : descending_(descending), width_(kPayloadWidth >= 0 ? static_cast<std::size_t>(kPayloadWidth) : width),
        src_(src), dst_(dst) {}

  // Merges runs [a, m) and [m, e) of src into [a, e) of dst, over slices on every thread. False when a
  // split was inconsistent (the runs were not sorted); the pair was then merged as one slice.
  bool MergePair(std::size_t a, std::size_t m, std::size_t e) const {
    const std::size_t n = e - a, slices = std::max<std::size_t>(1, n / kSliceElements);
    // at[j]: elements of the first run before slice j (the second run gives the rest).
    std::vector<std::size_t> at(slices + 1);
    at[0] = a;
    at[slices] = m;
    ForEachChunk(slices - 1, [&](std::size_t j) { at[j + 1] = Split(a, m, e, ChunkBegin(n, slices, j + 1)); });
    for (std::size_t j = 0; j < slices; ++j) {
      const std::size_t from_a = at[j + 1] - at[j], out = ChunkBegin(n, slices, j + 1) - ChunkBegin(n, slices, j);
      if (at[j + 1] < at[j] || at[j + 1] > m || from_a > out || m + ChunkBegin(n, slices, j + 1) - (at[j + 1] - a) > e) {
        MergeSlice(a, m, m, e, a);
        return false;
      }
    }
    ForEachChunk(slices, [&](std::size_t j) {
      const std::size_t out = a + ChunkBegin(n, slices, j);
      const std::size_t b_first = m + (ChunkBegin(n, slices, j) - (at[j] - a));
      const std::size_t b_last = m + (ChunkBegin(n, slices, j + 1) - (at[j + 1] - a));
      MergeSlice(at[j], at[j + 1], b_first, b_last, out);
    });
    return true;
  }

  // Copies [a, e) of src to dst (a run left without a partner in this pass).
  void Copy(std::size_t a, std::size_t e) const {
    ForEachRange(e - a, 64, [&](std::size_t b, std::size_t f) {
      std::memcpy(dst_.keys + (a + b) * sizeof(T), src_.keys + (a + b) * sizeof(T), (f - b) * sizeof(T));
      if (width_ != 0) std::memcpy(dst_.payload + (a + b) * width_, src_.payload + (a + b) * width_, (f - b) * width_);
    });
  }

 private:
  U Bits(std::size_t i) const {
    T key;
    std::memcpy(&key, src_.keys + i * sizeof(T), sizeof(T));
    return ToSortBits(key, descending_);
  }

  // How many of the first run [a, m) come before output position p of the pair (Merge Path's
  // co-rank): the largest i with every one of them at or before the second run's p - i first, ties to
  // the first run.
  std::size_t Split(std::size_t a, std::size_t m, std::size_t e, std::size_t p) const {
    std::size_t lo = p > e - m ? p - (e - m) : 0, hi = std::min(p, m - a);
    while (lo < hi) {  // i in (lo, hi]: does taking i from the first run still hold?
      const std::size_t i = lo + (hi - lo + 1) / 2;
      // Element i-1 of the first run must come before element p-i of the second (ties: first run first).
      if (p - i >= e - m || !(Bits(m + (p - i)) < Bits(a + i - 1))) {
        lo = i;
      } else {
        hi = i - 1;
      }
    }
    return a + lo;
  }

  void Emit(std::size_t from, std::size_t to) const {
    std::memcpy(dst_.keys + to * sizeof(T), src_.keys + from * sizeof(T), sizeof(T));
    if constexpr (kPayloadWidth != 0) {
      const std::size_t w = kPayloadWidth > 0 ? static_cast<std::size_t>(kPayloadWidth) : width_;
      std::memcpy(dst_.payload + to * w, src_.payload + from * w, w);
    }
  }

  // Merges [a, ae) and [b, be) of src into dst from `to`, branch-free on the keys.
  void MergeSlice(std::size_t a, std::size_t ae, std::size_t b, std::size_t be, std::size_t to) const {
    while (a < ae && b < be) {
      const bool take_b = Bits(b) < Bits(a);  // ties take the first run's key: stable
      Emit(take_b ? b : a, to++);
      b += take_b;
      a += !take_b;
    }
    while (a < ae) Emit(a++, to++);
    while (b < be) Emit(b++, to++);
  }

  const bool descending_;
  const std::size_t width_;
  const Arrays src_, dst_;
};

template <typename T, int kPayloadWidth>
void MergeTyped(const SortedRuns& runs, int threads) {
  std::vector<std::size_t> bounds(runs.bounds.begin(), runs.bounds.end());
  std::size_t passes = 0;
  for (std::size_t r = bounds.size() - 1; r > 1; r = (r + 1) / 2) ++passes;
  if (passes == 0) return;
  const std::size_t n = bounds.back(), width = runs.payload_width;
  const ScratchArray<std::byte> scratch_keys = MakeScratch<std::byte>(n * sizeof(T));
  const ScratchArray<std::byte> scratch_payload = MakeScratch<std::byte>(std::max<std::size_t>(n * width, 1));
  Arrays data{runs.keys.data(), runs.payload.data()}, scratch{scratch_keys.get(), scratch_payload.get()};
  // Each pass reads one array and writes the other; the last must write the caller's. With an odd
  // number of passes the first is a plain copy of the runs into scratch (a two-run merge: a copy, then
  // the merge back), so that no pass writes what it reads.
  Arrays src = data, dst = scratch;
  if (passes % 2 == 1) {
    Pass<T, kPayloadWidth>(runs.descending, width, data, scratch).Copy(0, n);
    std::swap(src, dst);
  }
  for (std::size_t p = 0; p < passes; ++p) {
    const Pass<T, kPayloadWidth> pass(runs.descending, width, src, dst);
    std::vector<std::size_t> next = {0};
    for (std::size_t r = 0; r + 1 < bounds.size(); r += 2) {
      if (r + 2 < bounds.size()) {
        (void)pass.MergePair(bounds[r], bounds[r + 1], bounds[r + 2]);
      } else {
        pass.Copy(bounds[r], bounds[r + 1]);
      }
      next.push_back(bounds[std::min(r + 2, bounds.size() - 1)]);
    }
    bounds = std::move(next);
    std::swap(src, dst);
  }
  (void)threads;
}

template <typename T>
void MergeWithPayload(const SortedRuns& runs, int threads) {
  switch (runs.payload_width) {
    case 0:
      MergeTyped<T, 0>(runs, threads);
      return;
    case 8:
      MergeTyped<T, 8>(runs, threads);
      return;
    default:
      MergeTyped<T, -1>(runs, threads);
  }
}

}  // namespace

void MergeSortedRuns(const SortedRuns& runs, int threads) {
  if (runs.bounds.size() < 3 || runs.bounds.back() == 0) return;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  tbb::task_arena arena(threads);
  arena.execute([&] { VisitDType(runs.dtype, [&](auto tag) { MergeWithPayload<decltype(tag)>(runs, threads); }); });
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
