#include "server/core/spec.h"

namespace gpusort {
namespace {
struct AlgorithmAlias { std::string_view name; Algorithm algorithm; };
constexpr AlgorithmAlias kAlgorithmNames[] = {
    {"auto", Algorithm::kAuto},       {"radix", Algorithm::kRadix},
    {"merge", Algorithm::kMerge},     {"bitonic", Algorithm::kBitonic},
    {"odd_even", Algorithm::kOddEven}, {"quicksort", Algorithm::kQuicksort},
    {"cpu", Algorithm::kCpu},         {"radix_select", Algorithm::kRadixSelect},
    {"small_k", Algorithm::kSmallK},  {"thread_lists", Algorithm::kThreadLists}};
}  // namespace

std::string_view AlgorithmName(Algorithm a) {
  for (const auto& alias : kAlgorithmNames)
    if (alias.algorithm == a) return alias.name;
  return "unknown";
}

bool ParseAlgorithm(std::string_view name, Algorithm* out) {
  for (const auto& alias : kAlgorithmNames) {
    if (alias.name == name) {
      *out = alias.algorithm;
      return true;
    }
  }
  return false;
}

}  // namespace gpusort
