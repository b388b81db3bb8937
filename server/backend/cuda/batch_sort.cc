#include "server/backend/cuda/batch_sort.h"

#include <bit>
#include <cstring>
#include <vector>

#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/runtime.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/backend/cuda/staging.h"
#include "server/core/key_order.h"
#include "server/core/status_macros.h"

namespace gpusort {
namespace {

template <typename T>
std::uint32_t SortBitsAt(const std::byte* p, bool descending) {
  T key;
  std::memcpy(&key, p, sizeof(T));
  return ToSortBits(key, descending);
}

template <typename T>
void StoreFromSortBits(std::uint32_t bits, bool descending, std::byte* out) {
  const T key = FromSortBits<T>(bits, descending);
  std::memcpy(out, &key, sizeof(T));
}

}  // namespace

absl::Status SortBatchOnGpu(DeviceContext& context, const SortSpec& spec, std::span<BatchItem> items,
                            const std::string& device_name) {
  const bool descending = spec.order == SortOrder::kDescending;
  const bool with_positions = spec.payload == SortPayload::kIndices;
  std::vector<std::size_t> offsets(items.size() + 1, 0);
  for (std::size_t i = 0; i < items.size(); ++i) offsets[i + 1] = offsets[i] + items[i].buffers.count;
  const std::size_t n = offsets.back();
  if (n == 0) return absl::OkStatus();

  // Composite keys on the host (a batch is at most a million keys: a few milliseconds would be too
  // many, but this is well under one), with the bits that vary in the low half.
  StageClock prepare;
  std::vector<std::uint64_t> composite(n);
  std::uint32_t or_bits = 0, and_bits = ~std::uint32_t{0};
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::byte* keys = items[i].buffers.keys.data();
    const std::uint64_t high = static_cast<std::uint64_t>(i) << 32;
    VisitDType(spec.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (sizeof(T) == 4) {
        for (std::size_t j = 0; j < items[i].buffers.count; ++j) {
          const std::uint32_t bits = SortBitsAt<T>(keys + j * 4, descending);
          or_bits |= bits;
          and_bits &= bits;
          composite[offsets[i] + j] = high | bits;
        }
      }
    });
  }
  const std::uint32_t varying = or_bits ^ and_bits;
  const int request_bits = items.size() > 1 ? std::bit_width(items.size() - 1) : 0;

  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::UseDevice(context.ordinal()), "selecting the GPU");
  StageClock wait;
  DeviceContext::Lease lease = context.Acquire();
  StreamSlot& slot = lease.slot();
  const double wait_seconds = wait.Seconds();

  kernels::RadixSortArgs args;
  args.key_width = kernels::KeyWidth::k64;
  args.payload = with_positions ? kernels::Payload::kIndexU32 : kernels::Payload::kNone;
  args.count = n;
  args.begin_bit = varying == 0 ? 32 : std::countr_zero(varying);
  args.end_bit = 32 + request_bits;
  if (args.begin_bit >= args.end_bit) args.begin_bit = args.end_bit = 0;  // one request of equal keys
  std::size_t temp_bytes = 0;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSortTempBytes(args, &temp_bytes), "sizing the sort");
  const std::size_t position_bytes = with_positions ? n * 4 : 0;
  std::vector<kernels::DeviceAllocation> mem;
  RETURN_IF_ERROR(context.AllocateAll(slot.stream, {n * 8, n * 8, position_bytes, position_bytes, temp_bytes}, &mem));
  args.keys[0] = mem[0].data();
  args.keys[1] = mem[1].data();
  args.values[0] = mem[2].data();
  args.values[1] = mem[3].data();
  const double prepare_seconds = prepare.Seconds();

  StageClock h2d;
  RETURN_IF_ERROR(Upload(slot, reinterpret_cast<const std::byte*>(composite.data()), args.keys[0], n * 8, 8,
                         PlainCopyFn()));
  const double h2d_seconds = h2d.Seconds();
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.kernel_start.Record(slot.stream), "recording an event");
  int result = 0;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSort(args, mem[4].data(), temp_bytes, slot.stream, &result),
                                 "radix sort");
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.kernel_stop.Record(slot.stream), "recording an event");
  StageClock d2h;
  RETURN_IF_ERROR(Download(slot, args.keys[result], reinterpret_cast<std::byte*>(composite.data()), n * 8, 8,
                           PlainCopyFn()));
  std::vector<std::uint32_t> positions(with_positions ? n : 0);
  if (with_positions) {
    RETURN_IF_ERROR(Download(slot, args.values[result], reinterpret_cast<std::byte*>(positions.data()), n * 4, 4,
                             PlainCopyFn()));
  }
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.stream.Synchronize(), "finishing the batch");
  double kernel_seconds = 0;
  (void)slot.kernel_stop.SecondsSince(slot.kernel_start, &kernel_seconds);
  const BatchStageSeconds seconds{.prepare = prepare_seconds, .stream_wait = wait_seconds, .h2d = h2d_seconds,
                                  .kernel = kernel_seconds, .d2h = d2h.Seconds()};

  // Request i's answer is entries [offsets[i], offsets[i+1]): its keys, and positions less its offset.
  for (std::size_t i = 0; i < items.size(); ++i) {
    std::byte* keys = items[i].buffers.keys.data();
    VisitDType(spec.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (sizeof(T) == 4) {
        for (std::size_t j = 0; j < items[i].buffers.count; ++j) {
          StoreFromSortBits<T>(static_cast<std::uint32_t>(composite[offsets[i] + j]), descending, keys + j * 4);
        }
      }
    });
    if (with_positions) {
      for (std::size_t j = 0; j < items[i].buffers.count; ++j) {
        items[i].buffers.indices_out[j] = static_cast<std::int64_t>(positions[offsets[i] + j] - offsets[i]);
      }
    }
    ReportBatchItem(*items[i].report, Algorithm::kRadix, device_name, seconds);
  }
  return absl::OkStatus();
}

void ReportBatchItem(ExecutionReport& report, Algorithm algorithm, const std::string& device_name,
                     const BatchStageSeconds& seconds) {
  report.algorithm = algorithm;
  report.backend = BackendKind::kCuda;
  report.device = device_name;
  report.AddStage(Stage::kBatchPrepare, seconds.prepare);
  report.AddStage(Stage::kStreamWait, seconds.stream_wait);
  report.AddStage(Stage::kH2d, seconds.h2d);
  report.AddStage(Stage::kKernel, seconds.kernel);
  report.AddStage(Stage::kD2h, seconds.d2h);
}

}  // namespace gpusort
