// ThreadListsTopK (kernels/top_k.h, THREAD_LISTS: the write-up's per-thread lists, repaired) against
// the first k of a stable sort of each row: every input pattern, both key widths, row lengths from 1 to
// one row of 16M (one block a row, and passes over the blocks' lists), k from 1 to the row length and
// the limit, sorted and not, ties at the k-th key (the write-up dropped repeated keys), float
// specials, either output alone, and k over kThreadListsMaxK refused. Skips when no GPU is usable.
#include <gtest/gtest.h>

#include <cstdint>

#include "gpusort/kernels/top_k.h"
#include "tests/gpu/top_k_cases.h"

namespace gpusort {
namespace {

const testing::TopKKernel kLists{kernels::ThreadListsTopKTempBytes, kernels::ThreadListsTopK, kernels::kThreadListsMaxK,
                                 "kThreadListsMaxK"};

TEST(ThreadListsTopKTest, EveryPatternAndLength32) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectEveryPatternAndLength<std::uint32_t>(kLists);
}

TEST(ThreadListsTopKTest, EveryPatternAndLength64) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectEveryPatternAndLength<std::uint64_t>(kLists);
}

TEST(ThreadListsTopKTest, ManyRows) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectManyRows<std::uint32_t>(kLists);
  testing::ExpectManyRows<std::uint64_t>(kLists);
}

TEST(ThreadListsTopKTest, TiesAroundTheKth) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectTiesAroundTheKth<std::uint32_t>(kLists);
  testing::ExpectTiesAroundTheKth<std::uint64_t>(kLists);
}

TEST(ThreadListsTopKTest, LongRows) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectLongRows<std::uint32_t>(kLists, (1 << 20) + 1);
  testing::ExpectLongRows<std::uint64_t>(kLists, (1 << 20) + 1);
  testing::ExpectLongRows<std::uint32_t>(kLists, 1 << 24);
}

TEST(ThreadListsTopKTest, FloatSpecials) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectFloatSpecials<float>(kLists);
  testing::ExpectFloatSpecials<double>(kLists);
}

TEST(ThreadListsTopKTest, BenchmarkShapes) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectBenchmarkShapes(kLists);
}

TEST(ThreadListsTopKTest, EitherOutputAlone) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectEitherOutputAlone<std::uint32_t>(kLists);
  testing::ExpectEitherOutputAlone<std::uint64_t>(kLists);
}

TEST(ThreadListsTopKTest, BadArgumentsRefused) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::ExpectBadArgumentsRefused(kLists);
}

}  // namespace
}  // namespace gpusort
