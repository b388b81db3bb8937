// What one finished request reports to the metrics, once, at its end (Metrics::Record). A plain struct,
// so that what gathers records (JointRecord) need not see prometheus.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "server/core/execution_report.h"

namespace gpusort {

struct RequestRecord {
  std::string_view method;     // "Sort", "TopK", "SortStream", "TopKStream"
  std::string_view algorithm;  // what ran, or what was asked when it never ran
  std::string_view dtype;      // "u32", ... or "unknown"
  std::string_view code;       // gRPC status code name, "OK", "INVALID_ARGUMENT", ...
  double seconds = 0;          // arrival to reply
  uint64_t keys = 0;           // keys processed (0 unless it succeeded)
  const std::vector<StageTime>* stages = nullptr;
};

}  // namespace gpusort
