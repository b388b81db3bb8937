#include "server/backend/cuda/top_k_select.h"

#include <string>
#include <vector>

#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/top_k.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/backend/cuda/staging.h"
#include "server/backend/cuda/gpu_limits.h"
#include "server/core/status_macros.h"

namespace gpusort {
namespace {

using TempBytesFn = kernels::Status (*)(const kernels::TopKArgs&, std::size_t*);
using SelectFn = kernels::Status (*)(const kernels::TopKArgs&, void*, std::size_t, const kernels::Stream&);

struct Selection {
  TempBytesFn temp_bytes;
  SelectFn select;
  std::size_t max_k;  // 0: any k
};

Selection SelectionOf(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kSmallK: return {kernels::SmallTopKTempBytes, kernels::SmallTopK, kernels::kSmallTopKMaxK};
    case Algorithm::kThreadLists:
      return {kernels::ThreadListsTopKTempBytes, kernels::ThreadListsTopK, kernels::kThreadListsMaxK};
    default: return {kernels::RadixSelectTopKTempBytes, kernels::RadixSelectTopK, 0};
  }
}

}  // namespace

bool IsTopKSelection(Algorithm algorithm) {
  return algorithm == Algorithm::kRadixSelect || algorithm == Algorithm::kSmallK ||
         algorithm == Algorithm::kThreadLists;
}

absl::Status CheckTopKSelectionLimits(Algorithm algorithm, std::size_t k) {
  const std::size_t max_k = SelectionOf(algorithm).max_k;
  if (max_k != 0 && k > max_k) {
    return absl::InvalidArgumentError(std::string(AlgorithmName(algorithm)) + " selects at most " +
                                      std::to_string(max_k) + " keys per row (k = " + std::to_string(k) +
                                      "); radix_select or AUTO take any k");
  }
  return absl::OkStatus();
}

absl::Status SelectTopKOnGpu(DeviceContext& context, Algorithm algorithm, const TopKSpec& spec,
                             const TopKBuffers& buffers, const Cancellation& cancellation, ExecutionReport& report) {
  const std::size_t n = buffers.count, width = ElementSize(spec.dtype);
  const std::size_t m = n / spec.rows, results = spec.rows * spec.k;
  if (n == 0 || spec.k == 0) return absl::OkStatus();
  RETURN_IF_ERROR(CheckGpuTopKKeys(n));
  RETURN_IF_ERROR(CheckTopKSelectionLimits(algorithm, spec.k));
  const Selection selection = SelectionOf(algorithm);
  report.algorithm = algorithm;

  kernels::TopKArgs args;
  args.key_width = width == 4 ? kernels::KeyWidth::k32 : kernels::KeyWidth::k64;
  args.rows = spec.rows;
  args.row_length = m;
  args.k = spec.k;
  args.sorted = spec.sorted;
  std::size_t temp_bytes = 0;
  GPUSORT_RETURN_IF_KERNEL_ERROR(selection.temp_bytes(args, &temp_bytes), "sizing the top-k");

  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::UseDevice(context.ordinal()), "selecting the GPU");
  StageClock wait;
  DeviceContext::Lease lease = context.Acquire();
  StreamSlot& slot = lease.slot();
  report.AddStage(Stage::kStreamWait, wait.Seconds());
  RETURN_IF_ERROR(cancellation.Check());

  enum { kKeys, kOutKeys, kOutPositions, kTemp };
  std::vector<kernels::DeviceAllocation> mem;
  RETURN_IF_ERROR(context.AllocateAll(slot.stream,
                                      {n * width, spec.wants_values() ? results * width : 0,
                                       spec.wants_indices() ? results * 8 : 0, temp_bytes},
                                      &mem));
  args.keys = mem[kKeys].data();
  args.out_keys = spec.wants_values() ? mem[kOutKeys].data() : nullptr;
  args.out_positions = spec.wants_indices() ? mem[kOutPositions].as<std::int64_t>() : nullptr;

  // Largest first = the smallest of the complemented bits: the kernels select the smallest.
  StageClock h2d;
  KeyBitsScan scan;
  RETURN_IF_ERROR(Upload(slot, buffers.keys.data(), mem[kKeys].data(), n * width, width,
                         ToOrderedBitsFn(spec.dtype, spec.largest, &scan)));
  report.AddStage(Stage::kH2d, h2d.Seconds());
  RETURN_IF_ERROR(cancellation.Check());

  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.kernel_start.Record(slot.stream), "recording an event");
  GPUSORT_RETURN_IF_KERNEL_ERROR(selection.select(args, mem[kTemp].data(), temp_bytes, slot.stream),
                                 std::string(AlgorithmName(algorithm)) + " top-k");
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.kernel_stop.Record(slot.stream), "recording an event");

  StageClock d2h;
  if (spec.wants_values()) {
    RETURN_IF_ERROR(Download(slot, mem[kOutKeys].data(), buffers.values_out.data(), results * width, width,
                             FromOrderedBitsFn(spec.dtype, spec.largest)));
  }
  if (spec.wants_indices()) {
    RETURN_IF_ERROR(Download(slot, mem[kOutPositions].data(), reinterpret_cast<std::byte*>(buffers.indices_out.data()),
                             results * 8, 8, PlainCopyFn()));
  }
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.stream.Synchronize(), "finishing the top-k");
  double kernel_seconds = 0;
  (void)slot.kernel_stop.SecondsSince(slot.kernel_start, &kernel_seconds);
  report.AddStage(Stage::kKernel, kernel_seconds);
  report.AddStage(Stage::kD2h, d2h.Seconds());
  return absl::OkStatus();
}

}  // namespace gpusort
