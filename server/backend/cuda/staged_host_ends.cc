#include "server/backend/cuda/staged_host_ends.h"

#include "server/backend/cuda/staging.h"
#include "server/core/status_macros.h"

namespace gpusort {

absl::StatusOr<std::uint64_t> StagedHostKeys::IngestKeys(const GpuJobEnv& env, const KeyCoding& coding,
                                                         void* device_keys) {
  KeyBitsScan scan;
  RETURN_IF_ERROR(Upload(env.slot, keys_.data(), device_keys, count_ * coding.key_bytes(), coding.key_bytes(),
                         ToOrderedBitsFn(coding.dtype, coding.complement, &scan)));
  return scan.varying();
}

absl::Status StagedHostKeys::IngestValues(const GpuJobEnv& env, void* device_values, std::size_t bytes,
                                          std::size_t width) {
  return Upload(env.slot, values_.data(), device_values, bytes, width, PlainCopyFn());
}

absl::Status StagedHostResults::EgressKeys(const GpuJobEnv& env, const KeyCoding& coding,
                                           kernels::DeviceAllocation& keys, std::size_t count) {
  return Download(env.slot, keys.data(), keys_.data(), count * coding.key_bytes(), coding.key_bytes(),
                  FromOrderedBitsFn(coding.dtype, coding.complement));
}

absl::Status StagedHostResults::EgressPositions(const GpuJobEnv& env, kernels::DeviceAllocation& positions,
                                                std::size_t count, PositionWidth width) {
  auto* out = reinterpret_cast<std::byte*>(positions_.data());
  if (width == PositionWidth::kI64) return Download(env.slot, positions.data(), out, count * 8, 8, PlainCopyFn());
  std::int64_t* wide = positions_.data();
  return Download(env.slot, positions.data(), out, count * 4, 4,
                  [out, wide](std::byte* dst, const std::byte* src, std::size_t bytes) {
                    // dst is `out` advanced at uint32 width; the positions widen to int64 as they land.
                    const std::size_t first = static_cast<std::size_t>(dst - out) / 4;
                    WidenPositions(reinterpret_cast<const std::uint32_t*>(src), wide + first, bytes / 4);
                  });
}

absl::Status StagedHostResults::EgressValues(const GpuJobEnv& env, const void* device_values, std::size_t bytes,
                                             std::size_t width) {
  return Download(env.slot, device_values, values_.data(), bytes, width, PlainCopyFn());
}

}  // namespace gpusort
