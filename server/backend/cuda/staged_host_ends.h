// A GPU job's ends for bytes in a gRPC message (pageable host memory): they cross through the slot's
// two pinned staging buffers, chunk by chunk (staging.h), and the host turns keys into ordered bits
// and back as each chunk passes, work that rides on the copy for free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "server/backend/cuda/gpu_job_ends.h"

namespace gpusort {

class StagedHostKeys final : public GpuKeySource {
 public:
  StagedHostKeys(std::span<const std::byte> keys, std::size_t count, std::span<const std::byte> values = {})
      : keys_(keys), count_(count), values_(values) {}
  std::size_t count() const override { return count_; }
  absl::StatusOr<std::uint64_t> IngestKeys(const GpuJobEnv& env, const KeyCoding& coding, void* device_keys) override;
  absl::Status IngestValues(const GpuJobEnv& env, void* device_values, std::size_t bytes,
                            std::size_t width) override;

 private:
  std::span<const std::byte> keys_;
  std::size_t count_;
  std::span<const std::byte> values_;
};

class StagedHostResults final : public GpuResultSink {
 public:
  // Any of them may be empty when the request does not ask for it.
  StagedHostResults(std::span<std::byte> keys, std::span<std::int64_t> positions, std::span<std::byte> values = {})
      : keys_(keys), positions_(positions), values_(values) {}
  absl::Status EgressKeys(const GpuJobEnv& env, const KeyCoding& coding, kernels::DeviceAllocation& keys,
                          std::size_t count) override;
  absl::Status EgressPositions(const GpuJobEnv& env, kernels::DeviceAllocation& positions, std::size_t count,
                               PositionWidth width) override;
  absl::Status EgressValues(const GpuJobEnv& env, const void* device_values, std::size_t bytes,
                            std::size_t width) override;

 private:
  std::span<std::byte> keys_;
  std::span<std::int64_t> positions_;
  std::span<std::byte> values_;
};

}  // namespace gpusort
