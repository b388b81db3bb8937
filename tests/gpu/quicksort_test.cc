// Quicksort (kernels/comparison_sorts.h) against std::stable_sort: every pattern and edge size; the
// same with its limits lowered, so that small inputs take the paths only adversarial or huge ones
// would (one block's quicksort of a work-list range, the bitonic network fallback, a spent launch
// budget); sizes around its tile; 64M random 32-bit keys; 16M sorted, reversed, all-equal, organ-pipe
// and few-distinct keys (no quadratic case may time out); 16M 64-bit keys with positions; several
// sorts at once on their own streams, sharing the device runtime's launch pool. Then the write-up's
// one-thread-per-partition quicksort (kernels/quicksort_writeup.h, a benchmark row) at small sizes.
// Skips when no GPU is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/quicksort_writeup.h"
#include "gpusort/kernels/runtime.h"
#include "kernels/src/quicksort_limits.h"
#include "tests/gpu/key_sort_harness.h"
#include "tests/support/inputs.h"

namespace gpusort {
namespace {

using testing::Device;
using testing::ExpectSortsLikeStableSort;
using testing::KernelDevice;
using testing::KeySortResult;
using testing::MakeInput;
using testing::Pattern;
using testing::PatternName;
using testing::ReferenceKeySort;
using testing::RunKeySort;

// Lowers Quicksort's limits for one test; the defaults come back at the end of it.
class ScopedLimits {
 public:
  explicit ScopedLimits(const kernels::QuicksortLimits& limits) { kernels::SetQuicksortLimitsForTesting(limits); }
  ~ScopedLimits() { kernels::SetQuicksortLimitsForTesting(kernels::QuicksortLimits{}); }
  ScopedLimits(const ScopedLimits&) = delete;
  ScopedLimits& operator=(const ScopedLimits&) = delete;
};

template <typename Key>
void ExpectMatchesReference(const std::vector<Key>& keys, bool with_positions) {
  testing::ExpectKeySortMatchesReference<Key>(kernels::QuicksortTempBytes, kernels::Quicksort, keys, with_positions);
}

TEST(QuicksortTest, SortsLikeStableSort) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  ExpectSortsLikeStableSort(kernels::QuicksortTempBytes, kernels::Quicksort, (1 << 20) + 1);
}

// No device launches past the root: both of its sides go on the work list, where one block each
// quicksorts them (hundreds of thousands of keys per block at 2^20 + 1).
TEST(QuicksortTest, BlockQuicksortSortsLikeStableSort) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  ScopedLimits limits({.max_grid_depth = 0});
  ExpectSortsLikeStableSort(kernels::QuicksortTempBytes, kernels::Quicksort, (1 << 20) + 1);
}

// As above, and a block may not recurse at all: every work-list range over 4096 keys takes the
// non-recursive fallback (bitonic network over the range, any length).
TEST(QuicksortTest, NetworkFallbackSortsLikeStableSort) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  ScopedLimits limits({.max_grid_depth = 0, .max_block_depth = 0});
  ExpectSortsLikeStableSort(kernels::QuicksortTempBytes, kernels::Quicksort, (1 << 20) + 1);
}

// Two device launches in all: a few ranges get grids, the rest of the tree goes on the work list at
// whatever size it has, and long runs of equal keys are filled by the partitioning block itself.
TEST(QuicksortTest, SpentLaunchBudgetSortsLikeStableSort) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  ScopedLimits limits({.launch_budget = 2});
  ExpectSortsLikeStableSort(kernels::QuicksortTempBytes, kernels::Quicksort, (1 << 20) + 1);
  for (Pattern pattern : {Pattern::kRandom, Pattern::kAllEqual, Pattern::kFewDistinct, Pattern::kOrganPipe}) {
    SCOPED_TRACE(PatternName(pattern) + " n=4M");
    ExpectMatchesReference(MakeInput<std::uint32_t>(pattern, std::size_t{4} << 20, 4), false);
  }
}

// Around the 4096-key tile and leaf size, and past 2^20 keys, where ranges of up to n/256 keys are
// left to one block each.
void ExpectSizesAroundTheTileSort() {
  constexpr std::size_t kTile = 4096;
  const std::size_t sizes[] = {kTile + 1,     2 * kTile - 1, 2 * kTile,        2 * kTile + 1,
                               3 * kTile + 17, 64 * kTile + 1, (std::size_t{1} << 21) + 3};
  for (Pattern pattern : {Pattern::kRandom, Pattern::kFewDistinct, Pattern::kReversed, Pattern::kOrganPipe}) {
    for (std::size_t n : sizes) {
      for (bool with_positions : {false, true}) {
        SCOPED_TRACE(PatternName(pattern) + " n=" + std::to_string(n) + (with_positions ? " positions" : ""));
        ExpectMatchesReference(MakeInput<std::uint32_t>(pattern, n, n + 3), with_positions);
        ExpectMatchesReference(MakeInput<std::uint64_t>(pattern, n, n + 5), with_positions);
      }
    }
  }
}

TEST(QuicksortTest, SizesAroundTheTile) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  ExpectSizesAroundTheTileSort();
}

// The network fallback on ranges that are not powers of two nor multiples of the tile.
TEST(QuicksortTest, NetworkFallbackSizesAroundTheTile) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  ScopedLimits limits({.max_grid_depth = 0, .max_block_depth = 0});
  ExpectSizesAroundTheTileSort();
}

TEST(QuicksortTest, Random64MU32) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  SKIP_OVER_TEST_MAX_KEYS(std::size_t{64} << 20);
  ExpectMatchesReference(MakeInput<std::uint32_t>(Pattern::kRandom, std::size_t{64} << 20, 64), false);
}

// The inputs that make a naive quicksort quadratic, at 16M keys.
TEST(QuicksortTest, Adversarial16MU32) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  SKIP_OVER_TEST_MAX_KEYS(std::size_t{16} << 20);
  for (Pattern pattern :
       {Pattern::kSorted, Pattern::kReversed, Pattern::kAllEqual, Pattern::kOrganPipe, Pattern::kFewDistinct}) {
    SCOPED_TRACE(PatternName(pattern));
    ExpectMatchesReference(MakeInput<std::uint32_t>(pattern, std::size_t{16} << 20, 16), false);
  }
}

// With positions every key is distinct as a (key, position) pair: all-equal keys are partitioned by
// position, few-distinct ones must come out in input order within each key.
TEST(QuicksortTest, Positions16M) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  SKIP_OVER_TEST_MAX_KEYS(std::size_t{16} << 20);
  for (Pattern pattern : {Pattern::kRandom, Pattern::kFewDistinct}) {
    SCOPED_TRACE(PatternName(pattern) + " u64");
    ExpectMatchesReference(MakeInput<std::uint64_t>(pattern, std::size_t{16} << 20, 17), true);
  }
  SCOPED_TRACE("all_equal u32");
  ExpectMatchesReference(MakeInput<std::uint32_t>(Pattern::kAllEqual, std::size_t{16} << 20, 18), true);
}

// Sorts at once on streams of their own: their device launches share one launch pool; whatever the
// pool refuses must still come out sorted.
TEST(QuicksortTest, ConcurrentSortsOnSeveralStreams) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  constexpr int kSorts = 8;
  constexpr std::size_t kCount = std::size_t{4} << 20;
  SKIP_OVER_TEST_MAX_KEYS(kCount);
  KernelDevice& d = *Device();
  struct One {
    kernels::Stream stream;
    kernels::DeviceAllocation keys, positions, temp;
    std::vector<std::uint32_t> input, got_keys, got_positions;
  };
  std::vector<One> sorts(kSorts);
  for (int i = 0; i < kSorts; ++i) {
    One& s = sorts[i];
    ASSERT_TRUE(kernels::Stream::Create(&s.stream).ok());
    s.input = MakeInput<std::uint32_t>(i % 2 ? Pattern::kFewDistinct : Pattern::kRandom, kCount, 100 + i);
    kernels::KeySortArgs args;
    args.count = kCount;
    std::size_t temp_bytes = 0;
    ASSERT_TRUE(d.pool.Allocate(kCount * 4, s.stream, &s.keys).ok());
    ASSERT_TRUE(d.pool.Allocate(kCount * 4, s.stream, &s.positions).ok());
    args.keys = s.keys.data();
    args.positions = s.positions.as<std::uint32_t>();
    ASSERT_TRUE(kernels::QuicksortTempBytes(args, &temp_bytes).ok());
    ASSERT_TRUE(d.pool.Allocate(temp_bytes, s.stream, &s.temp).ok());
    ASSERT_TRUE(kernels::CopyToDeviceAsync(args.keys, s.input.data(), kCount * 4, s.stream).ok());
    ASSERT_TRUE(s.stream.Synchronize().ok());  // all inputs in place before any sort starts
  }
  for (One& s : sorts) {
    kernels::KeySortArgs args;
    args.count = kCount;
    args.keys = s.keys.data();
    args.positions = s.positions.as<std::uint32_t>();
    const kernels::Status status = kernels::Quicksort(args, s.temp.data(), s.temp.size(), s.stream);
    ASSERT_TRUE(status.ok()) << status.message();
  }
  for (One& s : sorts) {
    s.got_keys.resize(kCount);
    s.got_positions.resize(kCount);
    ASSERT_TRUE(kernels::CopyToHostAsync(s.got_keys.data(), s.keys.data(), kCount * 4, s.stream).ok());
    ASSERT_TRUE(kernels::CopyToHostAsync(s.got_positions.data(), s.positions.data(), kCount * 4, s.stream).ok());
    ASSERT_TRUE(s.stream.Synchronize().ok());
    const KeySortResult<std::uint32_t> want = ReferenceKeySort(s.input, true);
    ASSERT_EQ(s.got_keys, want.keys);
    ASSERT_EQ(s.got_positions, want.positions);
  }
}

TEST(QuicksortTest, RejectsBadArguments) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  kernels::KeySortArgs args;
  std::size_t bytes = 0;
  args.count = std::size_t{1} << 31;
  EXPECT_EQ(kernels::QuicksortTempBytes(args, &bytes).code(), kernels::StatusCode::kInvalidArgument);
  std::uint32_t key = 0;
  args.count = 1000;
  args.keys = &key;  // never touched: the temp check comes first
  ASSERT_TRUE(kernels::QuicksortTempBytes(args, &bytes).ok());
  EXPECT_EQ(kernels::Quicksort(args, &key, bytes - 1, Device()->stream).code(),
            kernels::StatusCode::kInvalidArgument);
}

// The write-up's kernel, BENCHMARK ONLY: correct at the sizes the benchmark times it at.
TEST(WriteupQuicksortTest, SortsRandomKeys) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  KernelDevice& d = *Device();
  for (std::size_t n : {0, 1, 2, 33, 34, 1000, 100000}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const std::vector<std::uint32_t> keys = MakeInput<std::uint32_t>(Pattern::kRandom, n, n + 1);
    kernels::DeviceAllocation buffer;
    ASSERT_TRUE(d.pool.Allocate(std::max<std::size_t>(1, n * 4), d.stream, &buffer).ok());
    ASSERT_TRUE(kernels::CopyToDeviceAsync(buffer.data(), keys.data(), n * 4, d.stream).ok());
    const kernels::Status status = kernels::WriteupQuicksort(buffer.as<std::uint32_t>(), n, d.stream);
    ASSERT_TRUE(status.ok()) << status.message();
    std::vector<std::uint32_t> got(n);
    ASSERT_TRUE(kernels::CopyToHostAsync(got.data(), buffer.data(), n * 4, d.stream).ok());
    ASSERT_TRUE(d.stream.Synchronize().ok());
    std::vector<std::uint32_t> want = keys;
    std::sort(want.begin(), want.end());
    ASSERT_EQ(got, want);
  }
}

}  // namespace
}  // namespace gpusort
