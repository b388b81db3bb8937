// Test data for `gpusort gen`: a chosen dtype, size and distribution, reproducible from a seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpusort/v1/sort.pb.h"

namespace gpusort::cli {

// uniform (the whole range of the type; for floats finite values in [-1e6, 1e6)), normal (floats:
// mean 0, sd 1; integers: rounded, sd 1e6), sorted, reversed, few-distinct (16 values), all-equal,
// bits (every bit pattern, so floats include NaN, inf and -0.0).
const std::vector<std::string>& Distributions();
absl::StatusOr<std::string> Generate(v1::DType dtype, std::size_t count,
                                     const std::string& distribution, uint64_t seed);

}  // namespace gpusort::cli
