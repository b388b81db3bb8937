#include "server/backend/cpu/sort.h"

#include <cstdint>
#include <limits>
#include <memory>

#include "server/backend/cpu/gather.h"
#include "server/backend/cpu/radix_sort.h"
#include "server/backend/cpu/scratch.h"
#include "server/backend/cpu/small_sort.h"
#include "server/core/dtype.h"
#include "server/core/status_macros.h"

namespace gpusort::cpu {
namespace {

// Values of these widths ride through the radix passes as one integer; wider or odd widths are
// moved once, after the sort, by a gather through the permutation (fewer bytes moved per pass).
template <typename T>
absl::Status SortCarryingValues(std::size_t n, std::byte* keys, bool descending,
                                const SortBuffers& b, std::size_t width, int threads,
                                const Cancellation& cancel, bool* done) {
  auto carry = [&](auto tag) {
    using P = decltype(tag);
    *done = true;
    return radix::Sort<T>(n, keys, keys, descending,
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

template <typename T, typename Index>
absl::Status SortTyped(const SortSpec& spec, const SortBuffers& b, int threads,
                       const Cancellation& cancel, ExecutionReport& report) {
  const std::size_t n = b.count;
  const bool descending = spec.order == SortOrder::kDescending;
  std::byte* keys = b.keys.data();
  StageClock clock;
  if (n < kSmallSortMax) {
    SmallSort<T>(n, keys, descending, spec.payload, b.values.data(), spec.value_width,
                 b.values_out.data(), b.indices_out.data());
    report.AddStage(Stage::kSort, clock.Seconds());
    return absl::OkStatus();
  }
  switch (spec.payload) {
    case SortPayload::kNone:
      RETURN_IF_ERROR(radix::Sort<T>(n, keys, keys, descending, radix::NoPayload{}, threads, &cancel));
      break;
    case SortPayload::kIndices:
      RETURN_IF_ERROR(radix::Sort<T>(n, keys, keys, descending,
                                      radix::IndicesTo<Index>(b.indices_out.data()), threads,
                                      &cancel));
      break;
    case SortPayload::kValues: {
      bool carried = false;
      RETURN_IF_ERROR(SortCarryingValues<T>(n, keys, descending, b, spec.value_width, threads,
                                             cancel, &carried));
      if (carried) break;
      ScratchArray<Index> perm = MakeScratch<Index>(n);
      RETURN_IF_ERROR(radix::Sort<T>(n, keys, keys, descending,
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

}  // namespace

absl::Status SortOnCpu(const SortSpec& spec, const SortBuffers& buffers, int threads,
                       const Cancellation& cancellation, ExecutionReport& report) {
  return VisitDType(spec.dtype, [&](auto tag) {
    using T = decltype(tag);
    // Positions travel through the passes as 32-bit integers whenever they fit.
    if (buffers.count <= std::size_t{std::numeric_limits<uint32_t>::max()} + 1)
      return SortTyped<T, uint32_t>(spec, buffers, threads, cancellation, report);
    return SortTyped<T, uint64_t>(spec, buffers, threads, cancellation, report);
  });
}

}  // namespace gpusort::cpu
