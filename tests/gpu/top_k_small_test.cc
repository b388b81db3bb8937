// SmallTopK (kernels/top_k.h, SMALL_K) against the first k of a stable sort of each row: every input
// pattern, both key widths, row lengths that pick each group shape (a warp of 1 to 16 entries a lane,
// blocks of 128 x 8 to 512 x 16) and lengths past the largest tile (slices and candidate levels, up to
// one row of 16M), k from 1 to the row length and the limit, sorted and not, ties at the k-th key,
// float specials, either output alone, and bad arguments refused. Skips when no GPU is usable.
#include <gtest/gtest.h>

#include <cstdint>

#include "gpusort/kernels/top_k.h"
#include "tests/gpu/top_k_cases.h"

namespace gpusort {
namespace {

const testing::TopKKernel kSmall{kernels::SmallTopKTempBytes, kernels::SmallTopK, kernels::kSmallTopKMaxK,
                                 "kSmallTopKMaxK"};

TEST(SmallTopKTest, EveryPatternAndLength32) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectEveryPatternAndLength<std::uint32_t>(kSmall);
}

TEST(SmallTopKTest, EveryPatternAndLength64) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectEveryPatternAndLength<std::uint64_t>(kSmall);
}

TEST(SmallTopKTest, ManyRows) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectManyRows<std::uint32_t>(kSmall);
  testing::ExpectManyRows<std::uint64_t>(kSmall);
}

TEST(SmallTopKTest, TiesAroundTheKth) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectTiesAroundTheKth<std::uint32_t>(kSmall);
  testing::ExpectTiesAroundTheKth<std::uint64_t>(kSmall);
}

TEST(SmallTopKTest, LongRows) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectLongRows<std::uint32_t>(kSmall, (1 << 20) + 1);
  testing::ExpectLongRows<std::uint64_t>(kSmall, (1 << 20) + 1);
  testing::ExpectLongRows<std::uint32_t>(kSmall, 1 << 24);
}

TEST(SmallTopKTest, FloatSpecials) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectFloatSpecials<float>(kSmall);
  testing::ExpectFloatSpecials<double>(kSmall);
}

TEST(SmallTopKTest, BenchmarkShapes) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectBenchmarkShapes(kSmall);
}

TEST(SmallTopKTest, EitherOutputAlone) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectEitherOutputAlone<std::uint32_t>(kSmall);
  testing::ExpectEitherOutputAlone<std::uint64_t>(kSmall);
}

// 16-bit keys (KeyWidth::k16), read as they are: the selections SMALL_K and RADIX_SELECT take them.
TEST(SmallTopKTest, SixteenBitKeys) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectEveryPatternAndLength<std::uint16_t>(kSmall);
  testing::ExpectManyRows<std::uint16_t>(kSmall);
  testing::ExpectTiesAroundTheKth<std::uint16_t>(kSmall);
  testing::ExpectLongRows<std::uint16_t>(kSmall, (1 << 20) + 1);
  testing::ExpectEitherOutputAlone<std::uint16_t>(kSmall);
}

TEST(SmallTopKTest, KernelsBesideTheSelectionsRefuseSixteenBitKeys) {
  kernels::TopKArgs args;
  args.key_width = kernels::KeyWidth::k16;
  args.row_length = 100;
  args.k = 4;
  std::size_t bytes = 0;
  EXPECT_EQ(kernels::ThreadListsTopKTempBytes(args, &bytes).code(), kernels::StatusCode::kInvalidArgument);
  EXPECT_TRUE(kernels::SmallTopKTempBytes(args, &bytes).ok());
  EXPECT_TRUE(kernels::RadixSelectTopKTempBytes(args, &bytes).ok());
  kernels::RadixSortArgs sort;
  sort.key_width = kernels::KeyWidth::k16;
  sort.count = 100;
  EXPECT_EQ(kernels::RadixSortTempBytes(sort, &bytes).code(), kernels::StatusCode::kInvalidArgument);
}

// Raw keys (TopKArgs::raw_keys) are RADIX_SELECT's alone; SMALL_K and THREAD_LISTS say so.
TEST(SmallTopKTest, RawKeysAreRefusedByTheKernelsThatTakeOrderedBitsOnly) {
  kernels::TopKArgs args;
  args.row_length = 100;
  args.k = 4;
  args.raw_keys = true;
  args.raw_kind = kernels::KeyKind::kFloat;
  std::size_t bytes = 0;
  EXPECT_EQ(kernels::SmallTopKTempBytes(args, &bytes).code(), kernels::StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::ThreadListsTopKTempBytes(args, &bytes).code(), kernels::StatusCode::kInvalidArgument);
  EXPECT_TRUE(kernels::RadixSelectTopKTempBytes(args, &bytes).ok());
}

TEST(SmallTopKTest, BadArgumentsRefused) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectBadArgumentsRefused(kSmall);
}

}  // namespace
}  // namespace gpusort
