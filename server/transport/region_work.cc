#include "server/transport/region_work.h"

#include "server/core/status_macros.h"

namespace gpusort {

absl::StatusOr<SortRegions> PrepareOnRegions(ServiceCore& core, CallState& call, const v1::SortRequest& request,
                                             const SortSpec& spec) {
  ASSIGN_OR_RETURN(SortRegions regions, ResolveSortRegions(core.regions(), request, spec));
  call.keys = regions.count;
  RETURN_IF_ERROR(core.CheckSortAlgorithm(spec.algorithm));
  RETURN_IF_ERROR(core.CheckSortLimits(spec, call.keys));
  return regions;
}

absl::StatusOr<TopKRegions> PrepareOnRegions(ServiceCore& core, CallState& call, const v1::TopKRequest& request,
                                             const TopKSpec& spec) {
  ASSIGN_OR_RETURN(TopKRegions regions, ResolveTopKRegions(core.regions(), request, spec));
  call.keys = regions.count;
  RETURN_IF_ERROR(core.CheckTopKAlgorithm(spec.algorithm));
  RETURN_IF_ERROR(core.CheckTopKLimits(spec, call.keys));
  return regions;
}

namespace {

// Where a request's regions lie, for the engine (the service checked that they all lie alike).
template <typename Range>
Memory MemoryOf(const Range& keys) {
  return keys.on_device() ? Memory::kDeviceRegion : Memory::kRegisteredHost;
}

}  // namespace

absl::Status WorkOnRegions(ServiceCore& core, CallState& call, const SortSpec& spec, const SortRegions& regions) {
  SortBuffers buffers;
  buffers.count = regions.count;
  buffers.keys = regions.output.bytes;
  if (spec.payload == SortPayload::kIndices) {
    buffers.indices_out = std::span(reinterpret_cast<int64_t*>(regions.indices.bytes.data()), regions.count);
  }
  return RunSort(core.backend(), spec, buffers, call.cancellation, call.report, MemoryOf(regions.keys),
                 regions.keys.bytes);
}

absl::Status WorkOnRegions(ServiceCore& core, CallState& call, const TopKSpec& spec, const TopKRegions& regions) {
  TopKBuffers buffers;
  buffers.count = call.keys;
  buffers.keys = regions.keys.bytes;
  buffers.values_out = regions.values.bytes;
  buffers.indices_out = std::span(reinterpret_cast<int64_t*>(regions.indices.bytes.data()),
                                  regions.indices.bytes.size() / sizeof(int64_t));
  return RunTopK(core.backend(), spec, buffers, call.cancellation, call.report, MemoryOf(regions.keys));
}

}  // namespace gpusort
