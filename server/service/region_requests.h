// Sort and TopK requests that name shared-memory ranges instead of carrying bytes: every range checked
// against the request's options before anything is read or written.
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"
#include "gpusort/v1/sort.pb.h"
#include "server/core/spec.h"
#include "server/service/shared_regions.h"

namespace gpusort {

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
