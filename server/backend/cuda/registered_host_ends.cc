#include "server/backend/cuda/registered_host_ends.h"

#include "gpusort/kernels/gather.h"
#include "gpusort/kernels/key_transform.h"
#include "gpusort/kernels/memory.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/core/status_macros.h"

namespace gpusort {

absl::StatusOr<std::uint64_t> RegisteredHostKeys::Ingest(const GpuJobEnv& env, const KeyCoding& coding,
                                                         void* device_keys, bool read_varying) {
  StreamSlot& slot = env.slot;
  if (device_keys == nullptr && !on_device_) {
    return absl::InternalError("a registered host range cannot be read where it lies");
  }
  constexpr std::uint64_t kEveryBit = ~std::uint64_t{0};  // what a job that does not read the bits is told
  if (device_keys == nullptr && !read_varying) return kEveryBit;  // read where they lie, as they are
  constexpr std::size_t kOrAndBytes = 2 * sizeof(std::uint64_t);
  const std::size_t key_bytes = coding.key_bytes();
  const bool widen = key_bytes < coding.device_key_bytes() && device_keys != nullptr;
  const bool land = widen && !on_device_;  // host keys to widen land in scratch first
  RETURN_IF_ERROR(
      AllocateJobMemory(env, {read_varying ? kOrAndBytes : 0, land ? count_ * key_bytes : 0}, &scratch_));
  // The OR/AND accumulator, only where the bits are read: it starts as {0, ~0} and travels through the
  // slot's first pinned buffer. Without it the ingest is its copy and its kernel: no wait, no event.
  std::uint64_t* or_and_host = nullptr;
  std::uint64_t* or_and_device = nullptr;
  if (read_varying) {
    or_and_host = reinterpret_cast<std::uint64_t*>(slot.staging[0].data());
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[0].Synchronize(), "waiting for a staging buffer");
    or_and_host[0] = 0;
    or_and_host[1] = ~std::uint64_t{0};
    or_and_device = scratch_[0].as<std::uint64_t>();
  }
  // Keys in device memory are read where they lie, converted as they are copied (one pass); host keys
  // cross by DMA first, into scratch to widen from or into device_keys to convert in place.
  const void* from = keys_.data();
  if (!on_device_) {
    void* landing = land ? scratch_[1].data() : device_keys;
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(landing, keys_.data(), count_ * key_bytes, slot.stream),
                                   "host to device");
    from = landing;
  }
  if (read_varying) {
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::CopyToDeviceAsync(or_and_device, or_and_host, kOrAndBytes, slot.stream), "host to device");
  }
  GPUSORT_RETURN_IF_KERNEL_ERROR(
      widen ? kernels::WidenToOrderedBitsAsync(key_bytes, coding.kind(), coding.complement, from,
                                               static_cast<std::uint32_t*>(device_keys), count_, or_and_device,
                                               slot.stream)
            : kernels::ToOrderedBitsCopyAsync(coding.width(), coding.kind(), coding.complement, from, device_keys,
                                              count_, or_and_device, slot.stream),
      "ordered bits");
  if (!read_varying) return kEveryBit;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyToHostAsync(or_and_host, or_and_device, kOrAndBytes, slot.stream),
                                 "device to host");
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[0].Record(slot.stream), "recording an event");
  // The sort's bit range depends on what varies: wait for those 16 bytes (the copy in is done by then).
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[0].Synchronize(), "reading the varying bits");
  return or_and_host[0] ^ or_and_host[1];
}

absl::Status RegisteredHostResults::EgressKeys(const GpuJobEnv& env, const KeyCoding& coding,
                                               kernels::DeviceAllocation& keys, std::size_t count) {
  const std::size_t key_bytes = coding.key_bytes();
  if (on_device_) {  // converted straight into the caller's device range: one pass, no copy
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        key_bytes < coding.device_key_bytes()
            ? kernels::NarrowFromOrderedBitsAsync(key_bytes, coding.kind(), coding.complement,
                                                  keys.as<std::uint32_t>(), keys_.data(), count, env.slot.stream)
            : kernels::FromOrderedBitsCopyAsync(coding.width(), coding.kind(), coding.complement, keys.data(),
                                                keys_.data(), count, env.slot.stream),
        "key bits");
    return absl::OkStatus();
  }
  const void* out = keys.data();
  if (key_bytes < coding.device_key_bytes()) {
    RETURN_IF_ERROR(AllocateJobMemory(env, {count * key_bytes}, &narrow_));
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::NarrowFromOrderedBitsAsync(key_bytes, coding.kind(), coding.complement, keys.as<std::uint32_t>(),
                                            narrow_[0].data(), count, env.slot.stream),
        "key bits");
    out = narrow_[0].data();
  } else {
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::FromOrderedBitsAsync(coding.width(), coding.kind(), coding.complement,
                                                                 keys.data(), count, env.slot.stream),
                                   "key bits");
  }
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(keys_.data(), out, count * key_bytes, env.slot.stream),
                                 "device to host");
  return absl::OkStatus();
}

absl::Status RegisteredHostResults::EgressPositions(const GpuJobEnv& env, kernels::DeviceAllocation& positions,
                                                    std::size_t count, PositionWidth width) {
  const void* wide = positions.data();
  if (width == PositionWidth::kU32 && on_device_) {  // widened straight into the caller's device range
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::TakeRowPrefixesAsync(kernels::KeyWidth::k32, nullptr, positions.as<std::uint32_t>(), 1, count,
                                      count, nullptr, positions_.data(), env.slot.stream),
        "widening positions");
    return absl::OkStatus();
  }
  if (width == PositionWidth::kU32) {
    // uint32 positions widen to the API's int64 on the device: one row whose first `count` entries are
    // all of it (the keys argument is only read for out_keys, which is not asked for).
    RETURN_IF_ERROR(AllocateJobMemory(env, {count * 8}, &wide_));
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::TakeRowPrefixesAsync(kernels::KeyWidth::k32, nullptr, positions.as<std::uint32_t>(), 1, count,
                                      count, nullptr, wide_[0].as<std::int64_t>(), env.slot.stream),
        "widening positions");
    wide = wide_[0].data();
  }
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(positions_.data(), wide, count * 8, env.slot.stream),
                                 "device to host");
  return absl::OkStatus();
}

}  // namespace gpusort
