// The CPU sort's templates, by engine key type E (engine_key.h: 7 types serve the 12 dtypes, each
// key type's bias folded into the mask): the small sort, the radix sort with the payload carried
// through the passes or gathered after them, and rows. Each key type is compiled in the file of its
// width (sort_keys_8/16/32/64.cc), so that no one file instantiates the radix sort for all of them
// (under ASan that single file took over 12 minutes and 11 GB to compile).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>

#include "absl/status/status.h"
#include "server/backend/cpu/engine_key.h"
#include "server/backend/cpu/gather.h"
#include "server/backend/cpu/parallel.h"
#include "server/backend/cpu/radix_sort.h"
#include "server/core/scratch.h"
#include "server/backend/cpu/small_sort.h"
#include "server/core/cancellation.h"
#include "server/core/dtype.h"
#include "server/core/execution_report.h"
#include "server/core/spec.h"
#include "server/core/status_macros.h"

namespace gpusort::cpu::sort_internal {

// Values of these widths ride through the radix passes as one integer; wider or odd widths are
// moved once, after the sort, by a gather through the permutation (fewer bytes moved per pass).
template <typename E>
absl::Status SortCarryingValues(std::size_t n, std::byte* keys, OrderedBitsType<E> mask,
                                const SortBuffers& b, std::size_t width, int threads,
                                const Cancellation& cancel, bool* done) {
  auto carry = [&](auto tag) {
    using P = decltype(tag);
    *done = true;
    return radix::Sort<E>(n, keys, keys, mask,
                          radix::ValuesTo<P>(b.values.data(), b.values_out.data()), threads, &cancel);
  };
  switch (width) {
    case 1: return carry(uint8_t{});
    case 2: return carry(uint16_t{});
    case 4: return carry(uint32_t{});
    case 8: return carry(uint64_t{});
    default: *done = false; return absl::OkStatus();
  }
}

// bias: EngineBias of the request's key type (E serves it).
template <typename E, typename Index>
absl::Status SortTyped(const SortSpec& spec, const SortBuffers& b, OrderedBitsType<E> bias, int threads,
                       const Cancellation& cancel, ExecutionReport& report) {
  const std::size_t n = b.count;
  const OrderedBitsType<E> mask =
      OrderMask<OrderedBitsType<E>>(spec.order == SortOrder::kDescending) ^ bias;
  std::byte* keys = b.keys.data();
  StageClock clock;
  if (n < kSmallSortMax) {
    SmallSort<E>(n, keys, mask, spec.payload, b.values.data(), spec.value_width,
                 b.values_out.data(), b.indices_out.data());
    report.AddStage(Stage::kSort, clock.Seconds());
    return absl::OkStatus();
  }
  switch (spec.payload) {
    case SortPayload::kNone:
      RETURN_IF_ERROR(radix::Sort<E>(n, keys, keys, mask, radix::NoPayload{}, threads, &cancel));
      break;
    case SortPayload::kIndices:
      RETURN_IF_ERROR(radix::Sort<E>(n, keys, keys, mask,
                                      radix::IndicesTo<Index>(b.indices_out.data()), threads,
                                      &cancel));
      break;
    case SortPayload::kValues: {
      bool carried = false;
      RETURN_IF_ERROR(SortCarryingValues<E>(n, keys, mask, b, spec.value_width, threads,
                                             cancel, &carried));
      if (carried) break;
      ScratchArray<Index> perm = MakeScratch<Index>(n);
      RETURN_IF_ERROR(radix::Sort<E>(n, keys, keys, mask,
                                      radix::PermutationTo<Index>(perm.get()), threads, &cancel));
      report.AddStage(Stage::kSort, clock.Seconds());
      RETURN_IF_ERROR(cancel.Check());
      StageClock gather;
      GatherValues<Index>(b.values.data(), spec.value_width, perm.get(), n, b.values_out.data(),
                          threads);
      report.AddStage(Stage::kGather, gather.Seconds());
      return absl::OkStatus();
    }
  }
  report.AddStage(Stage::kSort, clock.Seconds());
  return absl::OkStatus();
}

// SortBuffers of keys [begin, begin + count) of `b`.
inline SortBuffers SegmentBuffers(const SortSpec& spec, const SortBuffers& b, std::size_t begin, std::size_t count) {
  const std::size_t key_bytes = ElementSize(spec.dtype), w = spec.value_width;
  SortBuffers segment;
  segment.count = count;
  segment.keys = b.keys.subspan(begin * key_bytes, count * key_bytes);
  if (spec.payload == SortPayload::kValues) {
    segment.values = b.values.subspan(begin * w, count * w);
    segment.values_out = b.values_out.subspan(begin * w, count * w);
  }
  if (spec.payload == SortPayload::kIndices) segment.indices_out = b.indices_out.subspan(begin, count);
  return segment;
}

// Each row or segment is a sort of its own, its indices counting from its start. With at least as many
// segments as threads, every thread takes whole segments and sorts each alone (no segment waits for
// another's threads; a long one among many short ones then sorts on one thread); fewer go one after
// another, each on every thread.
template <typename E>
absl::Status SortRowsTyped(const SortSpec& spec, const SortBuffers& b, OrderedBitsType<E> bias, int threads,
                           const Cancellation& cancel, ExecutionReport& report) {
  const std::size_t segments = spec.segment_count(), n = b.count;
  SortSpec one = spec;
  one.rows = 1;
  one.segment_offsets = nullptr;
  auto sort_segment = [&](std::size_t s, int segment_threads) {
    const std::size_t begin = spec.SegmentBegin(s, n), count = spec.SegmentBegin(s + 1, n) - begin;
    ExecutionReport segment_report;
    const SortBuffers buffers = SegmentBuffers(spec, b, begin, count);
    return count <= std::size_t{std::numeric_limits<uint32_t>::max()}
               ? SortTyped<E, uint32_t>(one, buffers, bias, segment_threads, cancel, segment_report)
               : SortTyped<E, uint64_t>(one, buffers, bias, segment_threads, cancel, segment_report);
  };
  StageClock clock;
  if (segments < static_cast<std::size_t>(threads)) {
    for (std::size_t s = 0; s < segments; ++s) {
      const absl::Status status = sort_segment(s, threads);
      RETURN_IF_ERROR(status);
    }
  } else {
    std::mutex failed_mutex;
    absl::Status failed;
    ForEachRange(segments, threads, [&](std::size_t begin, std::size_t end) {
      for (std::size_t s = begin; s < end; ++s) {
        absl::Status status = sort_segment(s, 1);
        if (!status.ok()) {
          std::lock_guard lock(failed_mutex);
          if (failed.ok()) failed = std::move(status);
          return;
        }
      }
    });
    RETURN_IF_ERROR(failed);
  }
  report.AddStage(Stage::kSort, clock.Seconds());
  return absl::OkStatus();
}

// The whole of SortOnCpu on engine key type E, for a key type of bias `bias`.
template <typename E>
absl::Status SortOnEngine(const SortSpec& spec, const SortBuffers& buffers, OrderedBitsType<E> bias, int threads,
                          const Cancellation& cancellation, ExecutionReport& report) {
  if (spec.segmented() && buffers.count > 0)
    return SortRowsTyped<E>(spec, buffers, bias, threads, cancellation, report);
  // Positions travel through the passes as 32-bit integers whenever they fit.
  if (buffers.count <= std::size_t{std::numeric_limits<uint32_t>::max()} + 1)
    return SortTyped<E, uint32_t>(spec, buffers, bias, threads, cancellation, report);
  return SortTyped<E, uint64_t>(spec, buffers, bias, threads, cancellation, report);
}

// The whole of SortOnCpu for keys of type T.
template <typename T>
absl::Status SortKeysOf(const SortSpec& spec, const SortBuffers& buffers, int threads,
                        const Cancellation& cancellation, ExecutionReport& report) {
  return SortOnEngine<EngineKeyType<T>>(spec, buffers, EngineBias<T>(), threads, cancellation, report);
}

#define GPUSORT_CPU_SORT_KEYS_OF(T)                                                                     \
  template absl::Status SortKeysOf<T>(const SortSpec&, const SortBuffers&, int, const Cancellation&, \
                                      ExecutionReport&)
extern GPUSORT_CPU_SORT_KEYS_OF(int8_t);
extern GPUSORT_CPU_SORT_KEYS_OF(uint8_t);
extern GPUSORT_CPU_SORT_KEYS_OF(int16_t);
extern GPUSORT_CPU_SORT_KEYS_OF(uint16_t);
extern GPUSORT_CPU_SORT_KEYS_OF(Float16);
extern GPUSORT_CPU_SORT_KEYS_OF(BFloat16);
extern GPUSORT_CPU_SORT_KEYS_OF(int32_t);
extern GPUSORT_CPU_SORT_KEYS_OF(uint32_t);
extern GPUSORT_CPU_SORT_KEYS_OF(float);
extern GPUSORT_CPU_SORT_KEYS_OF(int64_t);
extern GPUSORT_CPU_SORT_KEYS_OF(uint64_t);
extern GPUSORT_CPU_SORT_KEYS_OF(double);

}  // namespace gpusort::cpu::sort_internal
