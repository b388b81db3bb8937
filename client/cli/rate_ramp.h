// The rate ramps of `gpusort bench`'s open loop: --ramp FROM:TO:STEP, the rates of a step ramp (ghz's
// step schedule), one measurement each; and --ramp-linear FROM:TO, a rate that moves in a straight line
// over one measurement (ghz's line schedule, made continuous), reported an interval at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpusort::cli {

// --ramp FROM:TO:STEP: FROM, FROM + STEP, ... up to TO (included when a step lands on it; descending
// when TO < FROM). At most 1000 steps.
absl::StatusOr<std::vector<double>> RampRates(const std::string& ramp);

// A rate moving linearly from `from` to `to` requests/s over `seconds`: rate(t) = from + (to - from)
// t / seconds. Request i (from 0) is due when the integral of the rate reaches i, so that the requests
// due in any interval are that interval's share of the ramp, whatever the rate does in it.
struct LinearRamp {
  double from = 0, to = 0;  // requests/s at the start and at the end, both above 0
  double seconds = 0;       // the ramp's length, above 0

  double RateAt(double t) const;
  // Requests due in [0, t): the integral of the rate from 0 to t.
  double ArrivalsBy(double t) const;
  // When request i is due, in seconds from the start: the t at which ArrivalsBy(t) == i.
  double DueAt(uint64_t i) const;
};

// --ramp-linear FROM:TO over a measurement of `seconds`: two positive numbers (requests/s).
absl::StatusOr<LinearRamp> ParseLinearRamp(const std::string& ramp, double seconds);

}  // namespace gpusort::cli
