// Sort on the CPU: picks the path for a request (small sort, radix with the payload carried through
// the passes, or radix to a permutation and a gather for wide values) and stamps its stages.
#pragma once

#include "absl/status/status.h"
#include "server/core/cancellation.h"
#include "server/core/execution_report.h"
#include "server/core/spec.h"

namespace gpusort::cpu {

// Sorts as SortSpec asks (buffers consistent with it) on up to `threads` threads of the current TBB
// arena. Adds the stages "sort" and, for values moved by a gather, "gather".
absl::Status SortOnCpu(const SortSpec& spec, const SortBuffers& buffers, int threads,
                       const Cancellation& cancellation, ExecutionReport& report);

}  // namespace gpusort::cpu
