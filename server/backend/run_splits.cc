#include "server/backend/run_splits.h"

#include <algorithm>

#include "server/core/status_macros.h"
#include "server/core/varying_bits.h"

namespace gpusort {
namespace {

std::uint64_t MaskBelow(int bit) { return bit >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bit) - 1; }

}  // namespace

// long-function: the bisection, then the splits it yields, read best together
absl::StatusOr<RunSplits> FindRunSplits(std::span<const std::size_t> run_lengths,
                                        std::span<const std::size_t> positions, std::uint64_t or_bits,
                                        std::uint64_t and_bits, const RankInRuns& rank) {
  const std::size_t runs = run_lengths.size(), inner = positions.size(), blocks = inner + 1;
  std::size_t total = 0;
  for (std::size_t length : run_lengths) total += length;
  for (std::size_t q = 0; q < inner; ++q) {
    if (positions[q] == 0 || positions[q] >= total || (q > 0 && positions[q] < positions[q - 1])) {
      return absl::InternalError("run splits asked at positions out of order or out of the keys");
    }
  }
  int low = 0, high = 0;
  VaryingBitRange(or_bits ^ and_bits, &low, &high);
  // Bits at or above `high` and below `low` are the same in every key: those of and_bits.
  std::vector<std::uint64_t> value(inner, and_bits & ~MaskBelow(high)), queries(inner), at_or_below, below;
  for (int bit = high - 1; bit >= low && inner > 0; --bit) {
    for (std::size_t q = 0; q < inner; ++q) queries[q] = value[q] | MaskBelow(bit);
    RETURN_IF_ERROR(rank(queries, /*both=*/false, at_or_below, below));
    for (std::size_t q = 0; q < inner; ++q) {
      std::uint64_t count = 0;
      for (std::size_t r = 0; r < runs; ++r) count += at_or_below[q * runs + r];
      if (count <= positions[q]) value[q] |= std::uint64_t{1} << bit;
    }
  }
  RunSplits splits;
  splits.bounds.assign(blocks + 1, 0);
  splits.bounds.front() = and_bits;
  splits.bounds.back() = or_bits;
  splits.at.assign((blocks + 1) * runs, 0);
  for (std::size_t r = 0; r < runs; ++r) splits.at[blocks * runs + r] = run_lengths[r];
  if (inner == 0) return splits;
  for (std::size_t q = 0; q < inner; ++q) {
    value[q] |= and_bits & MaskBelow(low);
    splits.bounds[q + 1] = value[q];
  }
  RETURN_IF_ERROR(rank(value, /*both=*/true, at_or_below, below));
  const absl::Status disagree = absl::InternalError("the runs' ranks disagree with their lengths or order");
  for (std::size_t q = 0; q < inner; ++q) {
    std::uint64_t taken = 0;
    for (std::size_t r = 0; r < runs; ++r) taken += below[q * runs + r];
    if (taken > positions[q]) return disagree;
    std::uint64_t equal_left = positions[q] - taken;
    for (std::size_t r = 0; r < runs; ++r) {
      const std::uint64_t b = below[q * runs + r], a = at_or_below[q * runs + r];
      if (a < b || a > run_lengths[r]) return disagree;
      const std::uint64_t take = std::min(a - b, equal_left);
      splits.at[(q + 1) * runs + r] = b + take;
      equal_left -= take;
    }
    if (equal_left != 0) return disagree;
  }
  // Each run's splits never go back: what a block takes from a run lies after the block before's.
  for (std::size_t j = 0; j < blocks; ++j) {
    for (std::size_t r = 0; r < runs; ++r) {
      if (splits.at[(j + 1) * runs + r] < splits.at[j * runs + r]) return disagree;
    }
  }
  return splits;
}

}  // namespace gpusort
