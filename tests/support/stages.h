// Whether a request's ExecutionReport names a stage: how the tests tell which path served it (the
// merge on the devices or on the host, runs or one sort).
#pragma once

#include <algorithm>

#include "server/core/execution_report.h"

namespace gpusort::testing {

inline bool HasStage(const ExecutionReport& report, Stage stage) {
  return std::any_of(report.stages.begin(), report.stages.end(), [&](const StageTime& s) { return s.stage == stage; });
}

}  // namespace gpusort::testing
