#include "server/transport/region_requests.h"

#include <string>

#include "server/core/status_macros.h"
#include "server/transport/request_decode.h"

namespace gpusort {
namespace {

absl::Status Disjoint(const RegionRange& a, std::string_view a_name, const RegionRange& b, std::string_view b_name) {
  const bool same = a.bytes.data() == b.bytes.data() && a.bytes.size() == b.bytes.size();
  if (!same && SameOrDisjoint(a, b)) return absl::OkStatus();
  return absl::InvalidArgumentError(std::string(a_name) + " and " + std::string(b_name) + " overlap");
}

absl::Status StrayRegion(const char* field) {
  return absl::InvalidArgumentError(std::string(field) +
                                    " is set but keys_region is not: shared-memory outputs go with keys in "
                                    "shared memory (set keys_region, or drop " + field + ")");
}

// One request's ranges are all host memory or all device memory: the engines read and write each kind
// their own way.
absl::Status SameKind(const RegionRange& keys, const RegionRange& other, std::string_view other_name) {
  if (other.region == nullptr || other.on_device() == keys.on_device()) return absl::OkStatus();
  const auto kind = [](bool device) { return device ? "device memory" : "host memory"; };
  return absl::InvalidArgumentError("keys_region is " + std::string(kind(keys.on_device())) + " but " +
                                    std::string(other_name) + " is " + kind(other.on_device()) +
                                    ": one request's regions are all host memory or all device memory");
}

}  // namespace

absl::Status CheckNoStrayRegions(const v1::SortRequest& request) {
  if (request.has_keys_region()) return absl::OkStatus();
  if (request.has_output_region()) return StrayRegion("output_region");
  if (request.has_indices_region()) return StrayRegion("indices_region");
  return absl::OkStatus();
}

absl::Status CheckNoStrayRegions(const v1::TopKRequest& request) {
  if (request.has_keys_region()) return absl::OkStatus();
  if (request.has_values_region()) return StrayRegion("values_region");
  if (request.has_indices_region()) return StrayRegion("indices_region");
  return absl::OkStatus();
}

absl::StatusOr<SortRegions> ResolveSortRegions(const SharedRegions& regions, const v1::SortRequest& request,
                                               const SortSpec& spec) {
  if (!request.keys().empty() || !request.values().empty()) {
    return absl::InvalidArgumentError("a request with keys_region carries no keys or values bytes");
  }
  if (spec.payload == SortPayload::kValues) {
    return absl::InvalidArgumentError("PAYLOAD_VALUES is not offered over shared memory; send the values in the message");
  }
  if (!request.has_output_region()) {
    return absl::InvalidArgumentError("a request with keys_region needs output_region (keys_region again sorts in place)");
  }
  const bool with_indices = spec.payload == SortPayload::kIndices;
  if (with_indices != request.has_indices_region()) {
    return absl::InvalidArgumentError(with_indices ? "PAYLOAD_INDICES over shared memory needs indices_region"
                                                   : "indices_region is only for PAYLOAD_INDICES");
  }
  const std::size_t width = ElementSize(spec.dtype);
  SortRegions out;
  ASSIGN_OR_RETURN(out.count, CheckSortSizes(spec, request.keys_region().length(), 0));
  ASSIGN_OR_RETURN(out.keys, regions.Resolve(request.keys_region(), "keys_region", out.count * width, width));
  ASSIGN_OR_RETURN(out.output, regions.Resolve(request.output_region(), "output_region", out.count * width, width));
  RETURN_IF_ERROR(SameKind(out.keys, out.output, "output_region"));
  if (!SameOrDisjoint(out.keys, out.output)) {
    return absl::InvalidArgumentError("output_region must be keys_region's own range or not overlap it");
  }
  if (with_indices) {
    ASSIGN_OR_RETURN(out.indices, regions.Resolve(request.indices_region(), "indices_region",
                                                  out.count * sizeof(int64_t), sizeof(int64_t)));
    RETURN_IF_ERROR(SameKind(out.keys, out.indices, "indices_region"));
    RETURN_IF_ERROR(Disjoint(out.indices, "indices_region", out.keys, "keys_region"));
    RETURN_IF_ERROR(Disjoint(out.indices, "indices_region", out.output, "output_region"));
  }
  return out;
}

absl::StatusOr<TopKRegions> ResolveTopKRegions(const SharedRegions& regions, const v1::TopKRequest& request,
                                               const TopKSpec& spec) {
  if (!request.keys().empty()) {
    return absl::InvalidArgumentError("a request with keys_region carries no keys bytes");
  }
  if (spec.wants_values() != request.has_values_region()) {
    return absl::InvalidArgumentError(spec.wants_values() ? "this output needs values_region"
                                                          : "values_region is set but the output has no values");
  }
  if (spec.wants_indices() != request.has_indices_region()) {
    return absl::InvalidArgumentError(spec.wants_indices() ? "this output needs indices_region"
                                                           : "indices_region is set but the output has no indices");
  }
  const std::size_t width = ElementSize(spec.dtype);
  TopKRegions out;
  ASSIGN_OR_RETURN(out.count, CheckTopKShape(spec, request.keys_region().length()));
  ASSIGN_OR_RETURN(out.keys, regions.Resolve(request.keys_region(), "keys_region", out.count * width, width));
  const std::size_t results = spec.results();
  if (spec.wants_values()) {
    ASSIGN_OR_RETURN(out.values, regions.Resolve(request.values_region(), "values_region", results * width, width));
    RETURN_IF_ERROR(SameKind(out.keys, out.values, "values_region"));
    RETURN_IF_ERROR(Disjoint(out.values, "values_region", out.keys, "keys_region"));
  }
  if (spec.wants_indices()) {
    ASSIGN_OR_RETURN(out.indices, regions.Resolve(request.indices_region(), "indices_region",
                                                  results * sizeof(int64_t), sizeof(int64_t)));
    RETURN_IF_ERROR(SameKind(out.keys, out.indices, "indices_region"));
    RETURN_IF_ERROR(Disjoint(out.indices, "indices_region", out.keys, "keys_region"));
    if (spec.wants_values()) RETURN_IF_ERROR(Disjoint(out.indices, "indices_region", out.values, "values_region"));
  }
  return out;
}

}  // namespace gpusort
