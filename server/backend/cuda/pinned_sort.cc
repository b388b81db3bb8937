#include "server/backend/cuda/pinned_sort.h"

#include <cstring>
#include <vector>

#include "gpusort/kernels/gather.h"
#include "gpusort/kernels/key_transform.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/runtime.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/backend/cuda/staging.h"
#include "server/backend/cuda/gpu_limits.h"
#include "server/core/status_macros.h"

namespace gpusort {
namespace {

class RegisteredMemory final : public HostMemoryPin {
 public:
  explicit RegisteredMemory(kernels::HostRegistration registration) : registration_(std::move(registration)) {}

 private:
  kernels::HostRegistration registration_;
};

kernels::KeyKind KindOf(DType dtype) {
  switch (dtype) {
    case DType::kInt32:
    case DType::kInt64: return kernels::KeyKind::kSigned;
    case DType::kFloat32:
    case DType::kFloat64: return kernels::KeyKind::kFloat;
    default: return kernels::KeyKind::kUnsigned;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<HostMemoryPin>> PinForDevice(std::span<std::byte> memory) {
  kernels::HostRegistration registration;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::HostRegistration::Register(memory.data(), memory.size(), &registration),
                                 "registering shared memory with the GPU");
  return std::unique_ptr<HostMemoryPin>(new RegisteredMemory(std::move(registration)));
}

absl::Status SortPinnedOnGpu(DeviceContext& context, const SortSpec& spec, std::span<const std::byte> keys_in,
                             const SortBuffers& buffers, const Cancellation& cancellation, ExecutionReport& report) {
  const std::size_t n = buffers.count;
  const std::size_t key_bytes = ElementSize(spec.dtype);
  if (n == 0) return absl::OkStatus();
  RETURN_IF_ERROR(CheckGpuSortKeys(n));
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::UseDevice(context.ordinal()), "selecting the GPU");
  StageClock wait;
  DeviceContext::Lease lease = context.Acquire();
  StreamSlot& slot = lease.slot();
  report.AddStage(Stage::kStreamWait, wait.Seconds());
  RETURN_IF_ERROR(cancellation.Check());

  const bool with_positions = spec.payload == SortPayload::kIndices;
  kernels::RadixSortArgs args;
  args.key_width = key_bytes == 4 ? kernels::KeyWidth::k32 : kernels::KeyWidth::k64;
  args.payload = with_positions ? kernels::Payload::kIndexU32 : kernels::Payload::kNone;
  args.count = n;
  args.end_bit = static_cast<int>(key_bytes * 8);
  std::size_t temp_bytes = 0;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSortTempBytes(args, &temp_bytes), "sizing the sort");
  const std::size_t position_bytes = with_positions ? n * 4 : 0;
  enum { kKeys0, kKeys1, kPos0, kPos1, kWide, kTemp, kOrAnd };
  std::vector<kernels::DeviceAllocation> mem;
  RETURN_IF_ERROR(context.AllocateAll(slot.stream,
                                      {n * key_bytes, n * key_bytes, position_bytes, position_bytes,
                                       with_positions ? n * 8 : 0, temp_bytes, 2 * sizeof(std::uint64_t)},
                                      &mem));
  args.keys[0] = mem[kKeys0].data();
  args.keys[1] = mem[kKeys1].data();
  args.values[0] = mem[kPos0].data();
  args.values[1] = mem[kPos1].data();

  const bool descending = spec.order == SortOrder::kDescending;
  const kernels::KeyKind kind = KindOf(spec.dtype);
  // The OR/AND accumulator starts as {0, ~0}; it travels through the slot's pinned buffer.
  auto* or_and_host = reinterpret_cast<std::uint64_t*>(slot.staging[0].data());
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[0].Synchronize(), "waiting for a staging buffer");
  or_and_host[0] = 0;
  or_and_host[1] = ~std::uint64_t{0};

  StageClock h2d;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyToDeviceAsync(mem[kKeys0].data(), keys_in.data(), n * key_bytes,
                                                            slot.stream),
                                 "host to device");
  GPUSORT_RETURN_IF_KERNEL_ERROR(
      kernels::CopyToDeviceAsync(mem[kOrAnd].data(), or_and_host, 2 * sizeof(std::uint64_t), slot.stream),
      "host to device");
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.kernel_start.Record(slot.stream), "recording an event");
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::ToOrderedBitsAsync(args.key_width, kind, descending, mem[kKeys0].data(), n,
                                                             mem[kOrAnd].as<std::uint64_t>(), slot.stream),
                                 "ordered bits");
  GPUSORT_RETURN_IF_KERNEL_ERROR(
      kernels::CopyToHostAsync(or_and_host, mem[kOrAnd].data(), 2 * sizeof(std::uint64_t), slot.stream),
      "device to host");
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[0].Record(slot.stream), "recording an event");
  // The sort's bit range depends on what varies: wait for those 16 bytes (the copy in is done by then).
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[0].Synchronize(), "reading the varying bits");
  report.AddStage(Stage::kH2d, h2d.Seconds());
  RETURN_IF_ERROR(cancellation.Check());
  VaryingBitRange(or_and_host[0] ^ or_and_host[1], &args.begin_bit, &args.end_bit);

  int result = 0;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSort(args, mem[kTemp].data(), temp_bytes, slot.stream, &result),
                                 "radix sort");
  GPUSORT_RETURN_IF_KERNEL_ERROR(
      kernels::FromOrderedBitsAsync(args.key_width, kind, descending, args.keys[result], n, slot.stream), "key bits");
  if (with_positions) {
    // uint32 positions widen to the API's int64 on the device: one row whose first n entries are all.
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::TakeRowPrefixesAsync(args.key_width, args.keys[result],
                                      static_cast<const std::uint32_t*>(args.values[result]), 1, n, n, nullptr,
                                      mem[kWide].as<std::int64_t>(), slot.stream),
        "widening positions");
  }
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.kernel_stop.Record(slot.stream), "recording an event");
  StageClock d2h;
  GPUSORT_RETURN_IF_KERNEL_ERROR(
      kernels::CopyToHostAsync(buffers.keys.data(), args.keys[result], n * key_bytes, slot.stream), "device to host");
  if (with_positions) {
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::CopyToHostAsync(buffers.indices_out.data(), mem[kWide].data(), n * 8, slot.stream), "device to host");
  }
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.stream.Synchronize(), "finishing the sort");
  double kernel_seconds = 0;
  (void)slot.kernel_stop.SecondsSince(slot.kernel_start, &kernel_seconds);
  report.AddStage(Stage::kKernel, kernel_seconds);
  report.AddStage(Stage::kD2h, d2h.Seconds());
  return absl::OkStatus();
}

}  // namespace gpusort
