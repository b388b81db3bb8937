// A GPU job's ends for keys that are already on this GPU as ordered bits: the pieces of a stream or the
// ranges of a parted sort, ingested before the job (sort_ingest.cc). The source lends its buffer, so
// the job sorts in place of a copy; the sink keeps the results on the device, to be read back range
// by range as the reply goes out.
#pragma once

#include <cstddef>
#include <cstdint>

#include "server/backend/cuda/gpu_job_ends.h"

namespace gpusort {

class DeviceResidentKeys final : public GpuKeySource {
 public:
  // `keys` holds `count` ordered-bit keys whose varying bits (OR ^ AND) the ingest noted as they came.
  DeviceResidentKeys(kernels::DeviceAllocation& keys, std::size_t count, std::uint64_t varying)
      : keys_(keys), count_(count), varying_(varying) {}
  std::size_t count() const override { return count_; }
  kernels::DeviceAllocation* resident_keys() override { return &keys_; }
  absl::StatusOr<std::uint64_t> IngestKeys(const GpuJobEnv&, const KeyCoding&, void*) override { return varying_; }

 private:
  kernels::DeviceAllocation& keys_;
  std::size_t count_;
  std::uint64_t varying_;
};

class DeviceResidentResults final : public GpuResultSink {
 public:
  // Takes the result buffers as they are: ordered bits, uint32 positions.
  absl::Status EgressKeys(const GpuJobEnv&, const KeyCoding&, kernels::DeviceAllocation& keys, std::size_t) override {
    keys_ = std::move(keys);
    return absl::OkStatus();
  }
  absl::Status EgressPositions(const GpuJobEnv&, kernels::DeviceAllocation& positions, std::size_t,
                               PositionWidth width) override {
    if (width != PositionWidth::kU32) return absl::InternalError("resident results keep a sort's positions");
    positions_ = std::move(positions);
    return absl::OkStatus();
  }

  kernels::DeviceAllocation& keys() { return keys_; }
  kernels::DeviceAllocation& positions() { return positions_; }

 private:
  kernels::DeviceAllocation keys_;
  kernels::DeviceAllocation positions_;
};

}  // namespace gpusort
