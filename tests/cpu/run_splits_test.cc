// Where sorted runs split at positions of their merged order (server/backend/run_splits.h), the plan
// of the device merge (cuda/device_merged_sort.h), checked here against std::sort with an oracle that
// ranks by binary search, as the GPUs' search kernel does: every block's pieces are exactly the sorted
// array's slice at that block, equal keys are taken from earlier runs first (the merge is stable), and
// every block's keys lie between its bounds. Runs of adversarial keys: all equal, few distinct (runs of
// equal keys far longer than a block), one run, empty runs, the extremes of 64 bits, sizes off by one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "server/backend/run_splits.h"

namespace gpusort {
namespace {

using Runs = std::vector<std::vector<std::uint64_t>>;

// Ranks by binary search in each sorted run, and counts the oracle's calls.
RankInRuns SearchOracle(const Runs& runs, int& calls) {
  return [&runs, &calls](const std::vector<std::uint64_t>& queries, bool both, std::vector<std::uint64_t>& at_or_below,
                         std::vector<std::uint64_t>& below) {
    ++calls;
    at_or_below.assign(queries.size() * runs.size(), 0);
    below.assign(both ? queries.size() * runs.size() : 0, 0);
    for (std::size_t q = 0; q < queries.size(); ++q) {
      for (std::size_t r = 0; r < runs.size(); ++r) {
        const auto& run = runs[r];
        at_or_below[q * runs.size() + r] = std::upper_bound(run.begin(), run.end(), queries[q]) - run.begin();
        if (both) below[q * runs.size() + r] = std::lower_bound(run.begin(), run.end(), queries[q]) - run.begin();
      }
    }
    return absl::OkStatus();
  };
}

// Splits `runs` (each sorted here) at `blocks` equal blocks and checks the plan against the sorted whole.
void ExpectExactSplits(Runs runs, std::size_t blocks, const std::string& what) {
  std::vector<std::pair<std::uint64_t, std::size_t>> whole;  // (key, run): the stable merged order
  std::vector<std::size_t> lengths;
  std::uint64_t or_bits = 0, and_bits = ~std::uint64_t{0};
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::sort(runs[r].begin(), runs[r].end());
    lengths.push_back(runs[r].size());
    for (std::uint64_t k : runs[r]) {
      whole.emplace_back(k, r);
      or_bits |= k;
      and_bits &= k;
    }
  }
  std::sort(whole.begin(), whole.end());
  const std::size_t n = whole.size();
  std::vector<std::size_t> positions;
  for (std::size_t j = 1; j < blocks; ++j) positions.push_back(n * j / blocks);
  int calls = 0;
  const absl::StatusOr<RunSplits> splits = FindRunSplits(lengths, positions, or_bits, and_bits, SearchOracle(runs, calls));
  ASSERT_TRUE(splits.ok()) << what << ": " << splits.status();
  EXPECT_LE(calls, 65) << what << ": one call per varying bit and one more";
  const std::size_t R = runs.size();
  std::size_t at = 0;
  for (std::size_t j = 0; j < blocks; ++j) {
    // Gathered in run order, each block's pieces sorted stably are the merged order's slice.
    std::vector<std::pair<std::uint64_t, std::size_t>> block;
    for (std::size_t r = 0; r < R; ++r) {
      const std::size_t from = splits->at[j * R + r], to = splits->at[(j + 1) * R + r];
      ASSERT_LE(from, to) << what << " block " << j << " run " << r;
      for (std::size_t i = from; i < to; ++i) {
        block.emplace_back(runs[r][i], r);
        EXPECT_GE(runs[r][i], splits->bounds[j]) << what << " block " << j;
        EXPECT_LE(runs[r][i], splits->bounds[j + 1]) << what << " block " << j;
      }
    }
    std::stable_sort(block.begin(), block.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const std::size_t end = j + 1 < blocks ? positions[j] : n;
    ASSERT_EQ(block.size(), end - at) << what << " block " << j;
    for (std::size_t i = 0; i < block.size(); ++i) {
      ASSERT_EQ(block[i], whole[at + i]) << what << " block " << j << " key " << i;
    }
    at = end;
  }
}

Runs RandomRuns(std::size_t count, std::size_t length, std::uint64_t modulo, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Runs runs(count);
  for (std::size_t r = 0; r < count; ++r) {
    runs[r].resize(length + r % 3);  // runs of unequal lengths
    for (auto& k : runs[r]) k = modulo == 0 ? rng() : rng() % modulo;
  }
  return runs;
}

TEST(RunSplits, RandomKeysOfEveryWidth) {
  for (const std::uint64_t modulo : {std::uint64_t{0}, std::uint64_t{1} << 32, std::uint64_t{1} << 8}) {
    for (const std::size_t blocks : {2, 3, 7, 16}) {
      ExpectExactSplits(RandomRuns(5, 1000, modulo, modulo + blocks), blocks,
                        "modulo " + std::to_string(modulo) + " blocks " + std::to_string(blocks));
    }
  }
}

TEST(RunSplits, EqualKeysLongerThanABlockAreTakenFromEarlierRunsFirst) {
  ExpectExactSplits(RandomRuns(4, 2000, 1, 1), 9, "all equal");
  ExpectExactSplits(RandomRuns(4, 2000, 3, 2), 9, "three values");
  Runs skewed = RandomRuns(3, 1500, 0, 3);
  skewed[1].assign(4000, 42);  // one run all one key, crossing several blocks
  ExpectExactSplits(skewed, 8, "one run of one key");
}

TEST(RunSplits, ExtremesOneRunEmptyRunsAndSizesOffByOne) {
  Runs extremes = {{0, ~std::uint64_t{0}, 0, ~std::uint64_t{0} - 1, 1}, {~std::uint64_t{0}, 0, 1u << 31}};
  ExpectExactSplits(extremes, 3, "extremes");
  ExpectExactSplits(RandomRuns(1, 999, 0, 4), 4, "one run");
  Runs with_empty = RandomRuns(3, 100, 50, 5);
  with_empty.insert(with_empty.begin() + 1, std::vector<std::uint64_t>{});
  with_empty.push_back({});
  ExpectExactSplits(with_empty, 5, "empty runs");
  for (const std::size_t length : {63, 64, 65}) ExpectExactSplits(RandomRuns(2, length, 0, length), 2, "off by one");
  ExpectExactSplits(RandomRuns(3, 10, 0, 6), 1, "one block");
}

TEST(RunSplits, AnOracleThatDisagreesIsAnErrorNotAWrongPlan) {
  const std::vector<std::size_t> lengths = {10, 10};
  const std::vector<std::size_t> positions = {10};
  // Claims more keys below every value than the runs hold.
  const RankInRuns liar = [](const std::vector<std::uint64_t>& queries, bool both, std::vector<std::uint64_t>& at_or_below,
                             std::vector<std::uint64_t>& below) {
    at_or_below.assign(queries.size() * 2, 50);
    below.assign(both ? queries.size() * 2 : 0, 50);
    return absl::OkStatus();
  };
  EXPECT_EQ(FindRunSplits(lengths, positions, 0xFF, 0, liar).status().code(), absl::StatusCode::kInternal);
  const std::vector<std::size_t> bad_positions = {25};
  int calls = 0;
  const Runs runs = RandomRuns(2, 10, 0, 7);
  EXPECT_EQ(FindRunSplits(lengths, bad_positions, 0xFF, 0, SearchOracle(runs, calls)).status().code(),
            absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace gpusort
