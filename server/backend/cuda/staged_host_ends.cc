#include "server/backend/cuda/staged_host_ends.h"

#include "server/backend/cuda/staging.h"
#include "server/core/status_macros.h"

namespace gpusort {

absl::StatusOr<std::uint64_t> StagedHostKeys::IngestKeys(const GpuJobEnv& env, const KeyCoding& coding,
                                                         void* device_keys) {
  KeyBitsScan scan;
  RETURN_IF_ERROR(Upload(env.slot, keys_.data(), device_keys, count_, KeyElementBytes(coding.dtype, coding.native_width),
                         ToOrderedBitsFn(coding.dtype, coding.complement, &scan, coding.native_width)));
  return scan.varying();
}

absl::Status StagedHostKeys::IngestValues(const GpuJobEnv& env, void* device_values, std::size_t bytes,
                                          std::size_t width) {
  return Upload(env.slot, values_.data(), device_values, bytes / width, {width, width}, PlainCopyFn(width));
}

absl::Status StagedHostResults::EgressKeys(const GpuJobEnv& env, const KeyCoding& coding,
                                           kernels::DeviceAllocation& keys, std::size_t count) {
  return Download(env.slot, keys.data(), keys_.data(), count, KeyElementBytes(coding.dtype, coding.native_width),
                  FromOrderedBitsFn(coding.dtype, coding.complement, coding.native_width));
}

absl::Status StagedHostResults::EgressPositions(const GpuJobEnv& env, kernels::DeviceAllocation& positions,
                                                std::size_t count, PositionWidth width) {
  if (width == PositionWidth::kU32) {
    return DownloadPositions(env.slot, positions.as<std::uint32_t>(), positions_.data(), count);
  }
  return Download(env.slot, positions.data(), reinterpret_cast<std::byte*>(positions_.data()), count, {8, 8},
                  PlainCopyFn(8));
}

absl::Status StagedHostResults::EgressValues(const GpuJobEnv& env, const void* device_values, std::size_t bytes,
                                             std::size_t width) {
  return Download(env.slot, device_values, values_.data(), bytes / width, {width, width}, PlainCopyFn(width));
}

}  // namespace gpusort
