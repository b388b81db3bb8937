#include "client/cli/bench_device_memory.h"

namespace gpusort::cli {

absl::StatusOr<std::unique_ptr<BenchDeviceMemory>> BenchDeviceMemory::Allocate(std::size_t, int) {
  return absl::UnimplementedError("--transport device needs a gpusort built with CUDA; this one was built without");
}

}  // namespace gpusort::cli
