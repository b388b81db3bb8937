#include "client/cli/rate_ramp.h"

#include <cstdio>

namespace gpusort::cli {

// --ramp FROM:TO:STEP: FROM, FROM + STEP, ... up to TO (included when a step lands on it; descending
// when TO < FROM). At most 1000 steps.
absl::StatusOr<std::vector<double>> RampRates(const std::string& ramp) {
  double from = 0, to = 0, step = 0;
  char tail = 0;
  if (std::sscanf(ramp.c_str(), "%lf:%lf:%lf%c", &from, &to, &step, &tail) != 3 || !(from > 0) || !(to > 0) ||
      !(step > 0)) {
    return absl::InvalidArgumentError("--ramp takes FROM:TO:STEP, three positive numbers (requests/s), not '" +
                                      ramp + "'");
  }
  std::vector<double> rates;
  const double direction = to >= from ? 1 : -1;
  for (double r = from; direction * (to - r) >= -1e-9 * step; r += direction * step) {
    rates.push_back(r);
    if (rates.size() > 1000) return absl::InvalidArgumentError("--ramp makes more than 1000 steps");
  }
  return rates;
}

}  // namespace gpusort::cli
