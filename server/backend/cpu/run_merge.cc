#include "server/backend/cpu/run_merge.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <tbb/task_arena.h>

#include "server/backend/cpu/parallel.h"
#include "server/core/key_order.h"
#include "server/core/scratch.h"
#include "server/core/status_macros.h"

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

  // Merges the m <= kMaxWays runs [b[0], b[1]), ..., [b[m-1], b[m]) of src into [b[0], b[m]) of dst in
  // one go, over slices on every thread: for m > 2, one pass where two-way merges would take two or
  // three. False when a split was inconsistent (runs not sorted); the group was then merged as one slice.
  bool MergeGroup(const std::size_t* b, std::size_t m) const {
    const std::size_t n = b[m] - b[0], slices = std::max<std::size_t>(1, n / kSliceElements);
    // at[j * m + r]: where run r's part of slice j begins (slice `slices`: each run's end).
    std::vector<std::size_t> at((slices + 1) * m);
    for (std::size_t r = 0; r < m; ++r) {
      at[r] = b[r];
      at[slices * m + r] = b[r + 1];
    }
    ForEachChunk(slices - 1, [&](std::size_t j) { SplitGroup(b, m, ChunkBegin(n, slices, j + 1), &at[(j + 1) * m]); });
    for (std::size_t j = 0; j < slices; ++j) {
      std::size_t taken = 0;
      for (std::size_t r = 0; r < m; ++r) {
        const std::size_t lo = at[j * m + r], hi = at[(j + 1) * m + r];
        if (hi < lo || lo < b[r] || hi > b[r + 1]) taken = n + 1;  // inconsistent
        if (taken <= n) taken += hi - lo;
      }
      if (taken != ChunkBegin(n, slices, j + 1) - ChunkBegin(n, slices, j)) {
        std::vector<std::size_t> begin(b, b + m), end(b + 1, b + m + 1);
        Tournament(begin.data(), end.data(), m, b[0]);
        return false;
      }
    }
    ForEachChunk(slices, [&](std::size_t j) {
      Tournament(&at[j * m], &at[(j + 1) * m], m, b[0] + ChunkBegin(n, slices, j));
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

  // Elements of run r (of the group b) whose key is below v, or at most v.
  std::size_t CountBelow(const std::size_t* b, std::size_t r, U v, bool or_equal) const {
    std::size_t lo = b[r], hi = b[r + 1];
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      const U k = Bits(mid);
      if (k < v || (or_equal && k == v)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo - b[r];
  }

  // Where output position p of the group falls in each of its m runs (`at`, absolute): every element
  // before it ranks before every element after, keys equal to the one at p taken from earlier runs
  // first. A search over the key space: the smallest key v with at least p elements at or below it.
  void SplitGroup(const std::size_t* b, std::size_t m, std::size_t p, std::size_t* at) const {
    auto count_all = [&](U v, bool or_equal) {
      std::size_t total = 0;
      for (std::size_t r = 0; r < m; ++r) total += CountBelow(b, r, v, or_equal);
      return total;
    };
    U lo = 0, hi = static_cast<U>(~U{0});
    while (lo < hi) {
      const U mid = static_cast<U>(lo + (hi - lo) / 2);
      if (count_all(mid, true) >= p) {
        hi = mid;
      } else {
        lo = static_cast<U>(mid + 1);
      }
    }
    const std::size_t below = count_all(lo, false);
    std::size_t need = p > below ? p - below : 0;
    for (std::size_t r = 0; r < m; ++r) {
      const std::size_t lt = CountBelow(b, r, lo, false), le = CountBelow(b, r, lo, true);
      const std::size_t take = std::min(le > lt ? le - lt : 0, need);
      need -= take;
      at[r] = b[r] + lt + take;
    }
  }

  // A key and its run in one integer, so that one comparison orders by key and then by run (stable);
  // an exhausted run is kDone, above every key.
  using Ranked = std::conditional_t<sizeof(U) <= 4, uint64_t, unsigned __int128>;
  static constexpr Ranked kDone = ~Ranked{0};

  Ranked Head(std::size_t r, std::size_t at, std::size_t end, std::size_t last) const {
    // Reads at or before the run's last element whatever `at` is, and picks kDone without a branch.
    const Ranked ranked = (static_cast<Ranked>(Bits(std::min(at, last))) << kRunBits) | r;
    return at < end ? ranked : kDone;
  }

  // The least of kWays heads: a tree of branch-free minimums.
  template <std::size_t kWays>
  static Ranked Least(const Ranked* head) {
    if constexpr (kWays == 1) {
      return head[0];
    } else {
      const Ranked x = Least<kWays / 2>(head), y = Least<kWays / 2>(head + kWays / 2);
      return y < x ? y : x;
    }
  }

  // Merges [begin[r], end[r]) of each of m <= kWays runs into dst from `to`: a tournament of
  // branch-free minimums over (key, run), the winner's next key read in its place.
  template <std::size_t kWays>
  void TournamentSlice(const std::size_t* begin, const std::size_t* end, std::size_t m, std::size_t to) const {
    std::size_t at[kWays], last[kWays];
    Ranked head[kWays];
    std::size_t total = 0;
    for (std::size_t r = 0; r < kWays; ++r) {
      at[r] = r < m ? begin[r] : 0;
      last[r] = r < m && end[r] > begin[r] ? end[r] - 1 : 0;
      head[r] = r < m && begin[r] < end[r] ? Head(r, at[r], end[r], last[r]) : kDone;
      if (r < m) total += end[r] - begin[r];
    }
    for (std::size_t i = 0; i < total; ++i) {
      const std::size_t r = static_cast<std::size_t>(Least<kWays>(head) & (kMaxWays - 1));
      Emit(at[r]++, to++);
      head[r] = Head(r, at[r], end[r], last[r]);
    }
  }

  void Tournament(const std::size_t* begin, const std::size_t* end, std::size_t m, std::size_t to) const {
    if (m <= 4) return TournamentSlice<4>(begin, end, m, to);
    TournamentSlice<8>(begin, end, m, to);
  }

  // Eight at most: a tournament of sixteen (9 runs of 16G keys in one pass, after a copy hidden behind
  // the GPUs) took 11.7 s on the H200 pair where two passes of eight took 8.7 s: its minimums cost more
  // than the second pass's memory traffic.
  static constexpr std::size_t kMaxWays = 8;
  static constexpr int kRunBits = 3;  // log2(kMaxWays): the run's place below the key
  const bool descending_;
  const std::size_t width_;
  const Arrays src_, dst_;
};

// Runs merged in one pass of a group: two by Merge Path, up to eight by the tournament.
constexpr std::size_t GroupSize(std::size_t runs) { return runs <= 2 ? 2 : 8; }

std::size_t PassCount(std::size_t runs) {
  std::size_t passes = 0;
  for (std::size_t r = runs; r > 1; r = (r + GroupSize(r) - 1) / GroupSize(r)) ++passes;
  return passes;
}

// Every pass, from `src` (where the runs are) to `dst`, then back: the caller picks `src` so that the
// last pass writes the caller's arrays.
template <typename T, int kPayloadWidth>
absl::Status MergeTyped(const SortedRuns& runs, Arrays src, Arrays dst, const Cancellation& cancellation) {
  std::vector<std::size_t> bounds(runs.bounds.begin(), runs.bounds.end());
  const std::size_t passes = PassCount(bounds.size() - 1);
  for (std::size_t p = 0; p < passes; ++p) {
    if (absl::Status status = cancellation.Check(); !status.ok()) return status;
    const Pass<T, kPayloadWidth> pass(runs.descending, runs.payload_width, src, dst);
    const std::size_t count = bounds.size() - 1, group = GroupSize(count);
    std::vector<std::size_t> next = {0};
    for (std::size_t r = 0; r < count; r += group) {
      const std::size_t m = std::min(group, count - r);
      if (m == 1) {
        pass.Copy(bounds[r], bounds[r + 1]);
      } else if (m == 2) {
        (void)pass.MergePair(bounds[r], bounds[r + 1], bounds[r + 2]);
      } else {
        (void)pass.MergeGroup(&bounds[r], m);
      }
      next.push_back(bounds[r + m]);
    }
    bounds = std::move(next);
    std::swap(src, dst);
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status MergeWithPayload(const SortedRuns& runs, Arrays src, Arrays dst, const Cancellation& cancellation) {
  switch (runs.payload_width) {
    case 0:
      return MergeTyped<T, 0>(runs, src, dst, cancellation);
    case 8:
      return MergeTyped<T, 8>(runs, src, dst, cancellation);
    default:
      return MergeTyped<T, -1>(runs, src, dst, cancellation);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<RunMerge>> RunMerge::Prepare(const SortedRuns& runs, int threads) {
  std::unique_ptr<RunMerge> merge(new RunMerge());
  merge->bounds_.assign(runs.bounds.begin(), runs.bounds.end());
  merge->runs_ = runs;
  merge->runs_.bounds = merge->bounds_;
  merge->threads_ = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  merge->passes_ = merge->bounds_.size() < 2 ? 0 : PassCount(merge->bounds_.size() - 1);
  const std::size_t n = merge->bounds_.empty() ? 0 : merge->bounds_.back();
  if (merge->passes_ == 0 || n == 0) return merge;
  try {
    merge->keys_ = MakeScratch<std::byte>(n * ElementSize(runs.dtype));
    merge->payload_ = MakeScratch<std::byte>(std::max<std::size_t>(n * runs.payload_width, 1));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("no host memory for the merge of the sorted runs (" +
                                        std::to_string(n * (ElementSize(runs.dtype) + runs.payload_width)) +
                                        " bytes of scratch)");
  }
  merge->copied_ = std::make_unique<std::atomic<bool>[]>(merge->bounds_.size() - 1);
  return merge;
}

void RunMerge::RunSorted(std::size_t r) {
  // With an odd number of passes the runs start in the scratch (so that the last pass writes the
  // caller's arrays and no pass writes what it reads): this one goes there now.
  if (passes_ % 2 == 0 || copied_[r].exchange(true)) return;
  const std::size_t w = ElementSize(runs_.dtype), p = runs_.payload_width, b = bounds_[r], e = bounds_[r + 1];
  ParallelCopy(keys_.get() + b * w, runs_.keys.data() + b * w, (e - b) * w, threads_);
  if (p != 0) ParallelCopy(payload_.get() + b * p, runs_.payload.data() + b * p, (e - b) * p, threads_);
}

absl::Status RunMerge::Merge(const Cancellation& cancellation) {
  if (passes_ == 0) return absl::OkStatus();
  tbb::task_arena arena(threads_);
  absl::Status status;
  arena.execute([&] {
    ForEachChunk(bounds_.size() - 1, [&](std::size_t r) { RunSorted(r); });  // those not moved yet
    const Arrays data{runs_.keys.data(), runs_.payload.data()}, scratch{keys_.get(), payload_.get()};
    const bool from_scratch = passes_ % 2 == 1;
    status = VisitDType(runs_.dtype, [&](auto tag) {
      return MergeWithPayload<decltype(tag)>(runs_, from_scratch ? scratch : data, from_scratch ? data : scratch,
                                             cancellation);
    });
  });
  return status;
}

absl::Status MergeSortedRuns(const SortedRuns& runs, int threads, const Cancellation& cancellation) {
  ASSIGN_OR_RETURN(std::unique_ptr<RunMerge> merge, RunMerge::Prepare(runs, threads));
  return merge->Merge(cancellation);
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
