#include "server/backend/cuda/gpu_limits.h"

namespace gpusort {

absl::Status CheckGpuSortKeys(std::size_t count) {
  if (count <= kGpuMaxKeysPerRequest) return absl::OkStatus();
  return absl::InvalidArgumentError("the CUDA backend sorts at most 2^31-1 keys per request");
}

absl::Status CheckGpuTopKKeys(std::size_t count) {
  if (count <= kGpuMaxKeysPerRequest) return absl::OkStatus();
  return absl::InvalidArgumentError("the CUDA backend takes top-k of at most 2^31-1 keys per request");
}

}  // namespace gpusort
