// Sort and TopK on shared-memory ranges, from decoded options to the finished work: the part that a
// gRPC call (unary_calls.cc) and a call on the shared-memory socket (region_calls.cc) share, so that
// both check and run alike.
#pragma once

#include "absl/status/statusor.h"
#include "gpusort/v1/sort.pb.h"
#include "server/core/spec.h"
#include "server/service/call_state.h"
#include "server/transport/region_requests.h"
#include "server/service/service_core.h"

namespace gpusort {

// The request's ranges resolved against the registered regions, then the algorithm and the backend's
// limits; sets call.keys. The request has keys_region and its options are decoded into `spec`.
// Overloaded by method, so that code written once for both (region_call.cc) picks the right one.
absl::StatusOr<SortRegions> PrepareOnRegions(ServiceCore& core, CallState& call, const v1::SortRequest& request,
                                             const SortSpec& spec);
absl::StatusOr<TopKRegions> PrepareOnRegions(ServiceCore& core, CallState& call, const v1::TopKRequest& request,
                                             const TopKSpec& spec);

// The work itself, reading and writing the ranges in place (host memory through the engine's pinned
// path, device memory where it lies).
absl::Status WorkOnRegions(ServiceCore& core, CallState& call, const SortSpec& spec, const SortRegions& regions);
absl::Status WorkOnRegions(ServiceCore& core, CallState& call, const TopKSpec& spec, const TopKRegions& regions);

}  // namespace gpusort
