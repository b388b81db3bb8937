// Sort and TopK requests that name shared-memory ranges instead of carrying bytes: every range checked
// against the request's options before anything is read or written.
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"
#include "gpusort/v1/sort.pb.h"
#include "server/core/spec.h"
#include "server/service/shared_regions.h"

namespace gpusort {

// A request that names an output range (Sort: output_region or indices_region; TopK: values_region or
// indices_region) without keys_region is INVALID_ARGUMENT: it would otherwise be served from its bytes
// and its regions left unwritten without a word. For every Sort and TopK, with or without regions.
absl::Status CheckNoStrayRegions(const v1::SortRequest& request);
absl::Status CheckNoStrayRegions(const v1::TopKRequest& request);

struct SortRegions {
  std::size_t count = 0;
  RegionRange keys, output, indices;  // indices only for SortPayload::kIndices
};
absl::StatusOr<SortRegions> ResolveSortRegions(const SharedRegions& regions, const v1::SortRequest& request,
                                               const SortSpec& spec);

struct TopKRegions {
  std::size_t count = 0;
  RegionRange keys, values, indices;  // values / indices as the output option asks
};
absl::StatusOr<TopKRegions> ResolveTopKRegions(const SharedRegions& regions, const v1::TopKRequest& request,
                                               const TopKSpec& spec);

}  // namespace gpusort
