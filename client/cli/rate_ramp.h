// `gpusort bench --ramp FROM:TO:STEP`: the rates of a step ramp (ghz's step schedule), one
// measurement each.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpusort::cli {

// --ramp FROM:TO:STEP: FROM, FROM + STEP, ... up to TO (included when a step lands on it; descending
// when TO < FROM). At most 1000 steps.
absl::StatusOr<std::vector<double>> RampRates(const std::string& ramp);

}  // namespace gpusort::cli
