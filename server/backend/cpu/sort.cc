#include "server/backend/cpu/sort.h"

#include "server/backend/cpu/sort_typed.h"
#include "server/core/dtype.h"

namespace gpusort::cpu {

absl::Status SortOnCpu(const SortSpec& spec, const SortBuffers& buffers, int threads,
                       const Cancellation& cancellation, ExecutionReport& report) {
  return VisitDType(spec.dtype, [&](auto tag) {
    return sort_internal::SortKeysOf<decltype(tag)>(spec, buffers, threads, cancellation, report);
  });
}

}  // namespace gpusort::cpu
