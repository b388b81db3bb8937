#include "server/backend/cuda/gpu_job_ends.h"

#include "server/core/key_order.h"

namespace gpusort {

kernels::KeyKind KeyCoding::kind() const {
  return VisitDType(dtype, [](auto tag) { return KeyKindOf<decltype(tag)>(); });
}

// The defaults refuse: a job asks only for what its request has, so reaching one means a source or
// sink was paired with a request it does not serve.
absl::Status GpuKeySource::IngestValues(const GpuJobEnv&, void*, std::size_t, std::size_t) {
  return absl::InternalError("this key source carries no values");
}

absl::Status GpuResultSink::EgressPositions(const GpuJobEnv&, kernels::DeviceAllocation&, std::size_t,
                                            PositionWidth) {
  return absl::InternalError("this result sink takes no positions");
}

absl::Status GpuResultSink::EgressValues(const GpuJobEnv&, const void*, std::size_t, std::size_t) {
  return absl::InternalError("this result sink takes no values");
}

}  // namespace gpusort
