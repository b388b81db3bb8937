// A GPU job's ends for a range of registered host memory (a shared-memory region pinned with
// cudaHostRegister, host_registration.h): the keys cross PCIe by DMA straight from and to the caller's
// range and become ordered bits and back on the device, so that the host CPU never reads or writes
// them. About 3 ms of device work for 64 MiB of keys, against ~15 ms through the staging buffers.
// The same ends serve a caller's device memory imported into this process (a device region,
// device_regions.h): the copies find their direction from the addresses, and stay on the GPU there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "server/backend/cuda/gpu_job_ends.h"

namespace gpusort {

class RegisteredHostKeys final : public GpuKeySource {
 public:
  // `on_device`: the keys lie in an imported device region (so they may be read where they are).
  RegisteredHostKeys(std::span<const std::byte> keys, std::size_t count, bool on_device = false)
      : keys_(keys), count_(count), on_device_(on_device) {}
  std::size_t count() const override { return count_; }
  const void* raw_device_keys() const override { return on_device_ ? keys_.data() : nullptr; }
  absl::StatusOr<std::uint64_t> IngestKeys(const GpuJobEnv& env, const KeyCoding& coding, void* device_keys) override {
    return Ingest(env, coding, device_keys, /*read_varying=*/true);
  }
  absl::Status IngestKeysOnly(const GpuJobEnv& env, const KeyCoding& coding, void* device_keys) override {
    return Ingest(env, coding, device_keys, /*read_varying=*/false).status();
  }

 private:
  // Without `read_varying`, nothing is folded or read back: the copy (host keys) and the conversion are
  // queued, and the call returns without a wait or an event.
  absl::StatusOr<std::uint64_t> Ingest(const GpuJobEnv& env, const KeyCoding& coding, void* device_keys,
                                       bool read_varying);

  std::span<const std::byte> keys_;
  std::size_t count_;
  bool on_device_;
  // The device's OR/AND accumulator and, for narrow keys, their copy before they widen (until the job ends).
  std::vector<kernels::DeviceAllocation> scratch_;
};

// Its spans must lie in registered memory (or the copies fall back to the driver's staging: correct,
// slower).
class RegisteredHostResults final : public GpuResultSink {
 public:
  // `on_device`: the ranges lie in an imported device region (written in place by the conversions).
  RegisteredHostResults(std::span<std::byte> keys, std::span<std::int64_t> positions, bool on_device = false)
      : keys_(keys), positions_(positions), on_device_(on_device) {}
  void* raw_device_keys_out() override { return on_device_ ? keys_.data() : nullptr; }
  absl::Status EgressKeys(const GpuJobEnv& env, const KeyCoding& coding, kernels::DeviceAllocation& keys,
                          std::size_t count) override;
  absl::Status EgressPositions(const GpuJobEnv& env, kernels::DeviceAllocation& positions, std::size_t count,
                               PositionWidth width) override;

 private:
  std::span<std::byte> keys_;
  std::span<std::int64_t> positions_;
  bool on_device_;
  std::vector<kernels::DeviceAllocation> wide_;  // uint32 positions widened on the device, until the job ends
  std::vector<kernels::DeviceAllocation> narrow_;  // narrow keys back from their 32-bit ordered bits
};

}  // namespace gpusort
