// Device memory for `gpusort bench --transport device`: the bench plays a caller whose keys are already
// on a GPU of the server's node (sort.proto, "Device memory"). Built on the kernels' exportable device
// memory where this gpusort was built with CUDA (bench_device_memory_cuda.cc); elsewhere every
// allocation says so (bench_device_memory_none.cc), so the CLI itself never needs CUDA to build or run.
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"

namespace gpusort::cli {

class BenchDeviceMemory {
 public:
  virtual ~BenchDeviceMemory() = default;
  // `bytes` on GPU `ordinal`, exportable as a descriptor. UNIMPLEMENTED in a build without CUDA.
  static absl::StatusOr<std::unique_ptr<BenchDeviceMemory>> Allocate(std::size_t bytes, int ordinal = 0);
  // A new descriptor for it (the caller closes it once registered).
  virtual absl::StatusOr<int> ExportFd() = 0;
  virtual absl::Status Write(std::size_t offset, const void* src, std::size_t bytes) = 0;
  virtual absl::Status Read(std::size_t offset, void* dst, std::size_t bytes) const = 0;
};

}  // namespace gpusort::cli
