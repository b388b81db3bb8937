// OddEvenSort (kernels/comparison_sorts.h) against std::stable_sort: every pattern and edge size up to
// kOddEvenMaxKeys, both widths, with and without positions, and more keys than that refused.
// Skips when no GPU is usable.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpusort/kernels/comparison_sorts.h"
#include "tests/gpu/key_sort_harness.h"
#include "tests/support/inputs.h"

namespace gpusort {
namespace {

using testing::ExpectSortsLikeStableSort;
using testing::KeySortResult;
using testing::MakeInput;
using testing::Pattern;
using testing::RunKeySort;

TEST(OddEvenSortTest, SortsLikeStableSort) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  ExpectSortsLikeStableSort(kernels::OddEvenSortTempBytes, kernels::OddEvenSort, kernels::kOddEvenMaxKeys);
}

TEST(OddEvenSortTest, SizesUpToTheLimit) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  // Odd sizes and the limit itself, 64-bit keys with positions: the most shared memory (48 KiB).
  for (std::size_t n : {3, 4, 5, 63, 2047, 2049, 3001, 4094, 4096}) {
    if (testing::OverTestMaxKeys(n)) continue;
    for (Pattern pattern : {Pattern::kRandom, Pattern::kReversed, Pattern::kFewDistinct}) {
      SCOPED_TRACE(testing::PatternName(pattern) + " n=" + std::to_string(n));
      const std::vector<std::uint64_t> keys = MakeInput<std::uint64_t>(pattern, n, n);
      const KeySortResult<std::uint64_t> got =
          RunKeySort<std::uint64_t>(kernels::OddEvenSortTempBytes, kernels::OddEvenSort, keys, true);
      ASSERT_TRUE(got.status.ok()) << got.status.message();
      const KeySortResult<std::uint64_t> want = testing::ReferenceKeySort(keys, true);
      ASSERT_EQ(got.keys, want.keys);
      ASSERT_EQ(got.positions, want.positions);
    }
  }
}

TEST(OddEvenSortTest, RejectsMoreThanTheLimit) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  const std::vector<std::uint32_t> keys =
      MakeInput<std::uint32_t>(Pattern::kRandom, kernels::kOddEvenMaxKeys + 1, 1);
  const KeySortResult<std::uint32_t> got =
      RunKeySort<std::uint32_t>(kernels::OddEvenSortTempBytes, kernels::OddEvenSort, keys, false);
  EXPECT_EQ(got.status.code(), kernels::StatusCode::kInvalidArgument);

  // The sort itself refuses too, whatever its caller asked for temp.
  kernels::KeySortArgs args;
  args.count = kernels::kOddEvenMaxKeys + 1;
  EXPECT_EQ(kernels::OddEvenSort(args, nullptr, 0, testing::Device()->stream).code(),
            kernels::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpusort
