#include "server/backend/cuda/top_k_select.h"

#include <string>

namespace gpusort {

TopKSelection SelectionOf(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kSmallK: return {kernels::SmallTopKTempBytes, kernels::SmallTopK, kernels::kSmallTopKMaxK};
    case Algorithm::kThreadLists:
      return {kernels::ThreadListsTopKTempBytes, kernels::ThreadListsTopK, kernels::kThreadListsMaxK};
    default: return {kernels::RadixSelectTopKTempBytes, kernels::RadixSelectTopK, 0};
  }
}

bool IsTopKSelection(Algorithm algorithm) {
  return algorithm == Algorithm::kRadixSelect || algorithm == Algorithm::kSmallK ||
         algorithm == Algorithm::kThreadLists;
}

absl::Status CheckTopKSelectionLimits(Algorithm algorithm, std::size_t k) {
  const std::size_t max_k = SelectionOf(algorithm).max_k;
  if (max_k != 0 && k > max_k) {
    return absl::InvalidArgumentError(std::string(AlgorithmName(algorithm)) + " selects at most " +
                                      std::to_string(max_k) + " keys per row (k = " + std::to_string(k) +
                                      "); radix_select or AUTO take any k");
  }
  return absl::OkStatus();
}

absl::Status CheckTopKSegments(const TopKSpec& spec, Algorithm algorithm) {
  if (!spec.by_segments() || !IsTopKSelection(algorithm)) return absl::OkStatus();
  return absl::InvalidArgumentError(std::string(AlgorithmName(algorithm)) +
                                    " selects in rows of equal length; a TopK of segments takes auto or radix");
}

}  // namespace gpusort
