#include "client/cli/rate_ramp.h"

#include <algorithm>
#include <cmath>
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

double LinearRamp::RateAt(double t) const { return from + (to - from) * t / seconds; }

double LinearRamp::ArrivalsBy(double t) const { return from * t + (to - from) * t * t / (2 * seconds); }

double LinearRamp::DueAt(uint64_t i) const {
  // ArrivalsBy(t) = n is (to - from) / (2 seconds) t^2 + from t - n = 0. Its root, written as
  // 2n / (from + sqrt(from^2 + 2 (to - from) n / seconds)), holds for a flat ramp too (t = n / from)
  // and loses no digits to cancellation when the rate barely moves. The square root's argument stays
  // positive through the ramp and past its end (it is to^2 where the ramp ends).
  const double n = static_cast<double>(i);
  const double root = std::sqrt(std::max(0.0, from * from + 2 * (to - from) * n / seconds));
  return 2 * n / (from + root);
}

absl::StatusOr<LinearRamp> ParseLinearRamp(const std::string& ramp, double seconds) {
  LinearRamp parsed;
  char tail = 0;
  if (std::sscanf(ramp.c_str(), "%lf:%lf%c", &parsed.from, &parsed.to, &tail) != 2 || !(parsed.from > 0) ||
      !(parsed.to > 0) || !std::isfinite(parsed.from) || !std::isfinite(parsed.to)) {
    return absl::InvalidArgumentError("--ramp-linear takes FROM:TO, two positive numbers (requests/s), not '" +
                                      ramp + "'");
  }
  if (!(seconds > 0)) return absl::InvalidArgumentError("--ramp-linear needs a positive --duration");
  parsed.seconds = seconds;
  return parsed;
}

}  // namespace gpusort::cli
