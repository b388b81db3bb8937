// Test data for `gpusort gen`: a chosen dtype, size and distribution, reproducible from a seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/cli/client_types.h"

namespace gpusort::cli {

// uniform (the whole range of the type; for floats finite values in [-1e6, 1e6), float16's within
// +-65504, its largest), normal (floats: mean 0, sd 1; integers: rounded, sd 1e6, or for the 8- and
// 16-bit types a quarter of their largest value, clamped into their range), sorted, reversed,
// few-distinct (16 values), all-equal, bits (every bit pattern, so floats include NaN, inf and -0.0).
// float16 and bfloat16 values are drawn as float and rounded to nearest even.
const std::vector<std::string>& Distributions();
absl::StatusOr<std::string> Generate(DType dtype, std::size_t count,
                                     const std::string& distribution, uint64_t seed);

}  // namespace gpusort::cli
