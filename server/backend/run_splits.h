// Where sorted runs split at given positions of their merged order, found by bisecting the key space
// with an oracle that ranks values in every run: the plan of a merge whose runs the caller cannot read
// from here (the device merge's runs stay in GPU memory: cuda/device_merged_sort.h, whose oracle is a
// search kernel on each GPU). Plain C++, so that the CPU tests check it against std::sort.
//
// Keys are unsigned ordered bits (kernels/key_order.h) of up to 64 bits. For each position p the key v
// at sorted position p is the least v with more than p keys at or below it; each run's split is its keys
// below v, then of its keys equal to v as many as the earlier runs leave to reach p. The merged order
// this describes takes equal keys from earlier runs first, so a stable sort of each block's pieces,
// gathered in run order, is a stable merge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace gpusort {

// Ranks `queries` in every run: at_or_below[q * runs + r] = keys of run r at or below queries[q], and
// (`both`) below[q * runs + r] = keys of run r below it.
using RankInRuns = std::function<absl::Status(const std::vector<std::uint64_t>& queries, bool both,
                                              std::vector<std::uint64_t>& at_or_below,
                                              std::vector<std::uint64_t>& below)>;

struct RunSplits {
  // positions.size() + 2 entries: bounds[0] is the AND of every key, bounds.back() their OR, and
  // bounds[q + 1] the key at positions[q]. Block j (between consecutive positions, with 0 and the total
  // at the ends) holds keys in [bounds[j], bounds[j + 1]] only.
  std::vector<std::uint64_t> bounds;
  // (positions.size() + 2) x runs: block j takes keys [at[j * runs + r], at[(j + 1) * runs + r]) of run r.
  std::vector<std::size_t> at;
};

// `positions`: ascending, each in (0, total keys). or_bits / and_bits: the OR and the AND of every key's
// ordered bits (what varies bounds the bisection: one oracle call per bit that varies, plus one).
absl::StatusOr<RunSplits> FindRunSplits(std::span<const std::size_t> run_lengths,
                                        std::span<const std::size_t> positions, std::uint64_t or_bits,
                                        std::uint64_t and_bits, const RankInRuns& rank);

}  // namespace gpusort
