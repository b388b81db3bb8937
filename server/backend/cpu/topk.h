// TopK on the CPU: many rows run in parallel one row per task; a few long rows are each split over the
// threads (per-chunk candidates merged, or a parallel radix argsort when k is most of the row).
#pragma once

#include "absl/status/status.h"
#include "server/core/cancellation.h"
#include "server/core/execution_report.h"
#include "server/core/spec.h"

namespace gpusort::cpu {

// Fills the buffers as TopKSpec asks (buffers consistent with it) on up to `threads` threads of the
// current TBB arena. Adds the stage "select".
absl::Status TopKOnCpu(const TopKSpec& spec, const TopKBuffers& buffers, int threads,
                       const Cancellation& cancellation, ExecutionReport& report);

}  // namespace gpusort::cpu
