// The most keys one request may bring to the CUDA backend's GPU paths, in one place: what the backend
// publishes (Backend::CheckSortLimits, CheckTopKLimits, which the service checks while validating) and
// what each GPU entry point checks again before it sizes anything. CUB's sorts and the kernels index
// keys with 32-bit signed offsets.
#pragma once

#include <cstddef>

#include "absl/status/status.h"

namespace gpusort {

inline constexpr std::size_t kGpuMaxKeysPerRequest = (std::size_t{1} << 31) - 1;

// INVALID_ARGUMENT naming the limit when `count` keys are too many for a GPU sort, or a GPU top-k.
absl::Status CheckGpuSortKeys(std::size_t count);
absl::Status CheckGpuTopKKeys(std::size_t count);

}  // namespace gpusort
