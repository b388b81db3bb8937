#include "server/backend/cpu/topk.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "server/backend/cpu/engine_key.h"
#include "server/backend/cpu/parallel.h"
#include "server/backend/cpu/radix_sort.h"
#include "server/core/scratch.h"
#include "server/backend/cpu/topk_select.h"
#include "server/core/dtype.h"
#include "server/core/status_macros.h"

namespace gpusort::cpu {
namespace {

// Rows are handed out in tasks of about this many keys (at least one row).
constexpr std::size_t kTaskElements = 16384;

struct RowOutputs {
  std::byte* values;  // rows * k keys, or null
  int64_t* indices;   // rows * k positions, or null
};

// One long row split over the threads. mask: as in topk_select.h.
template <typename T, typename I>
absl::Status SelectRowParallel(const std::byte* row, std::size_t m, std::size_t k, OrderedBitsType<T> mask,
                               bool sorted, std::byte* values_out, int64_t* indices_out,
                               int threads, const Cancellation& cancel) {
  using U = OrderedBitsType<T>;
  using Cand = topk::Candidate<U, I>;
  if (k <= m / topk::kSmallKRatio) {
    // Every chunk's k best; the row's k best are among them.
    const std::size_t chunks = ChunkCount(m, threads);
    std::vector<std::vector<Cand>> best(chunks);
    ForEachChunk(chunks, [&](std::size_t c) {
      std::vector<Cand> buf;
      topk::FilterBest<T, I>(row, ChunkBegin(m, chunks, c), ChunkBegin(m, chunks, c + 1), k, mask,
                             buf, best[c]);
    });
    std::vector<Cand> all;
    for (auto& b : best) all.insert(all.end(), b.begin(), b.end());
    topk::KeepBest(all, k, sorted);
    topk::WriteResults<T>(row, 0, k, [&](std::size_t r) { return all[r].pos; }, values_out,
                          indices_out);
    return absl::OkStatus();
  }
  // Most of the row: the stable radix argsort (ties by position, as the rank order wants).
  ScratchArray<I> order = MakeScratch<I>(m);
  RETURN_IF_ERROR(radix::Order<T>(m, row, mask, radix::PermutationTo<I>(order.get()), threads, &cancel));
  ForEachRange(k, threads, [&](std::size_t b, std::size_t e) {
    topk::WriteResults<T>(row, b, e, [&](std::size_t r) { return order[r]; }, values_out,
                          indices_out);
  });
  return absl::OkStatus();
}

// Segments of any lengths: each yields min(k, its length) results at ResultBegin(s). Long segments go
// one after another, each over every thread; the others in tasks of whole segments, each on one thread
// (so one long segment among many short ones does not leave the other threads idle).
template <typename T, typename I>
absl::Status TopKSegments(const TopKSpec& spec, const TopKBuffers& b, OrderedBitsType<T> mask, int threads,
                          const Cancellation& cancel) {
  constexpr std::size_t kSize = sizeof(T);
  const RowOutputs out{spec.wants_values() ? b.values_out.data() : nullptr,
                       spec.wants_indices() ? b.indices_out.data() : nullptr};
  struct Segment {
    const std::byte* keys;
    std::size_t length, k;
    std::byte* values;
    int64_t* indices;
  };
  auto segment = [&](std::size_t s) {
    const std::size_t begin = spec.SegmentBegin(s, b.count), length = spec.SegmentBegin(s + 1, b.count) - begin;
    const std::size_t first = spec.ResultBegin(s);
    return Segment{b.keys.data() + begin * kSize, length, std::min(spec.k, length),
                   out.values ? out.values + first * kSize : nullptr, out.indices ? out.indices + first : nullptr};
  };
  std::vector<std::size_t> short_segments;
  for (std::size_t s = 0; s < spec.segment_count(); ++s) {
    const Segment g = segment(s);
    if (g.length == 0) continue;
    if (threads <= 1 || g.length < kParallelMinElements) {
      short_segments.push_back(s);
      continue;
    }
    RETURN_IF_ERROR(cancel.Check());
    RETURN_IF_ERROR((SelectRowParallel<T, I>(g.keys, g.length, g.k, mask, spec.sorted, g.values, g.indices,
                                             threads, cancel)));
  }
  if (short_segments.empty()) return absl::OkStatus();
  std::size_t short_keys = 0;
  for (std::size_t s : short_segments) short_keys += segment(s).length;
  const std::size_t grain = std::max<std::size_t>(1, kTaskElements * short_segments.size() / std::max<std::size_t>(1, short_keys));
  std::atomic<bool> stop{false};
  auto select = [&](std::size_t first, std::size_t last) {
    if (stop.load(std::memory_order_relaxed)) return;
    if (!cancel.Check().ok()) {
      stop.store(true, std::memory_order_relaxed);
      return;
    }
    topk::RowScratch<OrderedBitsType<T>, I> scratch;
    for (std::size_t i = first; i < last; ++i) {
      const Segment g = segment(short_segments[i]);
      topk::SelectRow<T, I>(g.keys, g.length, g.k, mask, spec.sorted, g.values, g.indices, scratch);
    }
  };
  if (threads <= 1 || short_keys < kParallelMinElements) {
    select(0, short_segments.size());
  } else {
    ParallelFor(tbb::blocked_range<std::size_t>(0, short_segments.size(), grain),
                [&](const tbb::blocked_range<std::size_t>& range) { select(range.begin(), range.end()); });
  }
  if (stop.load()) return cancel.Check();
  return absl::OkStatus();
}

// T: the engine key type (engine_key.h); bias: EngineBias of the request's key type.
template <typename T, typename I>
absl::Status TopKTyped(const TopKSpec& spec, const TopKBuffers& b, OrderedBitsType<T> bias, int threads,
                       const Cancellation& cancel) {
  const OrderedBitsType<T> mask = OrderMask<OrderedBitsType<T>>(spec.largest) ^ bias;
  if (spec.by_segments()) return TopKSegments<T, I>(spec, b, mask, threads, cancel);
  const std::size_t rows = spec.rows == 0 ? 1 : spec.rows;
  const std::size_t m = b.count / rows;
  const std::size_t k = spec.k;
  constexpr std::size_t kSize = sizeof(T);
  if (b.count == 0 || k == 0) return absl::OkStatus();
  const RowOutputs out{spec.wants_values() ? b.values_out.data() : nullptr,
                       spec.wants_indices() ? b.indices_out.data() : nullptr};
  auto row_values = [&](std::size_t r) { return out.values ? out.values + r * k * kSize : nullptr; };
  auto row_indices = [&](std::size_t r) { return out.indices ? out.indices + r * k : nullptr; };

  // A few long rows: one after the other, each on all threads.
  if (threads > 1 && m >= kParallelMinElements && rows < 2 * static_cast<std::size_t>(threads)) {
    for (std::size_t r = 0; r < rows; ++r) {
      RETURN_IF_ERROR(cancel.Check());
      RETURN_IF_ERROR((SelectRowParallel<T, I>(b.keys.data() + r * m * kSize, m, k, mask,
                                               spec.sorted, row_values(r), row_indices(r), threads,
                                               cancel)));
    }
    return absl::OkStatus();
  }

  // Many rows (or little work): tasks of whole rows, each row on one thread.
  const std::size_t grain = std::max<std::size_t>(1, kTaskElements / m);
  std::atomic<bool> stop{false};
  auto select_rows = [&](std::size_t first, std::size_t last) {
    if (stop.load(std::memory_order_relaxed)) return;
    if (!cancel.Check().ok()) {
      stop.store(true, std::memory_order_relaxed);
      return;
    }
    topk::RowScratch<OrderedBitsType<T>, I> scratch;
    for (std::size_t r = first; r < last; ++r)
      topk::SelectRow<T, I>(b.keys.data() + r * m * kSize, m, k, mask, spec.sorted,
                            row_values(r), row_indices(r), scratch);
  };
  if (threads <= 1 || b.count < kParallelMinElements || rows == 1) {
    for (std::size_t r = 0; r < rows && !stop.load(); r += grain) select_rows(r, std::min(rows, r + grain));
  } else {
    ParallelFor(tbb::blocked_range<std::size_t>(0, rows, grain),
                [&](const tbb::blocked_range<std::size_t>& range) { select_rows(range.begin(), range.end()); });
  }
  if (stop.load()) return cancel.Check();
  return absl::OkStatus();
}

}  // namespace

absl::Status TopKOnCpu(const TopKSpec& spec, const TopKBuffers& buffers, int threads,
                       const Cancellation& cancellation, ExecutionReport& report) {
  StageClock clock;
  const std::size_t rows = spec.rows == 0 ? 1 : spec.rows;
  // The longest row or segment (a segment may be the whole array).
  const std::size_t m = spec.by_segments() ? buffers.count : buffers.count / rows;
  absl::Status status = VisitDType(spec.dtype, [&](auto tag) {
    using T = decltype(tag);
    using E = EngineKeyType<T>;
    // Positions in a row are 32-bit integers whenever they fit.
    if (m <= std::size_t{std::numeric_limits<uint32_t>::max()} + 1)
      return TopKTyped<E, uint32_t>(spec, buffers, EngineBias<T>(), threads, cancellation);
    return TopKTyped<E, uint64_t>(spec, buffers, EngineBias<T>(), threads, cancellation);
  });
  if (!status.ok()) return status;
  report.AddStage(Stage::kSelect, clock.Seconds());
  return absl::OkStatus();
}

}  // namespace gpusort::cpu
