// MergeSort (kernels/comparison_sorts.h) against std::stable_sort: every pattern and edge size, sizes
// around the merge tile (where the global merge passes begin and where a pair of runs is short or
// alone), sizes around where the large block-sort tile takes over, 64M random 32-bit keys, and 16M
// 64-bit keys full of ties with positions, where any unstable merge would show. Skips when no GPU is
// usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/sorted_runs.h"
#include "tests/gpu/key_sort_harness.h"
#include "tests/support/inputs.h"

namespace gpusort {
namespace {

using testing::ExpectSortsLikeStableSort;
using testing::KeySortResult;
using testing::MakeInput;
using testing::Pattern;
using testing::PatternName;
using testing::ReferenceKeySort;
using testing::RunKeySort;

// The merge tile in keys (256 threads times 17 or 11 keys, merge_sort.cu), which is also the block-sort
// tile of small inputs: sizes are chosen around its multiples. From 128 * 1024 * (17 or 11) keys on,
// the block sort takes large tiles (1024 or 512 threads times 17 or 11 keys, both dividing kLargeTile).
// If the kernel's tiles change, these cases still check correctness.
constexpr std::size_t kTile32 = 256 * 17;
constexpr std::size_t kTile64 = 256 * 11;
constexpr std::size_t kLargeTile32 = 1024 * 17;
constexpr std::size_t kLargeTile64 = 1024 * 11;
constexpr std::size_t kLargeFromTiles = 128;

template <typename Key>
void ExpectMatchesReference(const std::vector<Key>& keys, bool with_positions) {
  testing::ExpectKeySortMatchesReference<Key>(kernels::MergeSortTempBytes, kernels::MergeSort, keys, with_positions);
}

TEST(MergeSortTest, SortsLikeStableSort) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  ExpectSortsLikeStableSort(kernels::MergeSortTempBytes, kernels::MergeSort, (1 << 20) + 1);
}

template <typename Key>
void ExpectTileEdgesSort(std::size_t tile) {
  // One tile, the first merge pass, an odd run with no partner, short last runs, several passes.
  const std::size_t sizes[] = {tile - 1, tile,         tile + 1,         2 * tile,          2 * tile + 1,
                               3 * tile, 5 * tile - 7, 8 * tile,         9 * tile + 3,      33 * tile + 100};
  for (Pattern pattern : {Pattern::kRandom, Pattern::kFewDistinct, Pattern::kReversed, Pattern::kOrganPipe}) {
    for (std::size_t n : sizes) {
      for (bool with_positions : {false, true}) {
        SCOPED_TRACE(PatternName(pattern) + " n=" + std::to_string(n) + " bits=" +
                     std::to_string(sizeof(Key) * 8) + (with_positions ? " positions" : ""));
        ExpectMatchesReference(MakeInput<Key>(pattern, n, n + 5), with_positions);
      }
    }
  }
}

TEST(MergeSortTest, SizesAroundTheTile) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  ExpectTileEdgesSort<std::uint32_t>(kTile32);
  ExpectTileEdgesSort<std::uint64_t>(kTile64);
}

template <typename Key>
void ExpectLargeTilesSort(std::size_t large_tile) {
  // Just below the large block sort, exactly its first size, one key more (a partial last tile), and
  // an odd number of tiles with a short last one.
  const std::size_t from = kLargeFromTiles * large_tile;
  const std::size_t sizes[] = {from - 1, from, from + 1, from + 3 * large_tile - 7};
  for (Pattern pattern : {Pattern::kRandom, Pattern::kFewDistinct}) {
    for (std::size_t n : sizes) {
      for (bool with_positions : {false, true}) {
        if (pattern != Pattern::kRandom && !with_positions) continue;
        SCOPED_TRACE(PatternName(pattern) + " n=" + std::to_string(n) + " bits=" +
                     std::to_string(sizeof(Key) * 8) + (with_positions ? " positions" : ""));
        ExpectMatchesReference(MakeInput<Key>(pattern, n, n + 11), with_positions);
      }
    }
  }
}

TEST(MergeSortTest, SizesAroundTheLargeTile) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  ExpectLargeTilesSort<std::uint32_t>(kLargeTile32);
  ExpectLargeTilesSort<std::uint64_t>(kLargeTile64);
}

TEST(MergeSortTest, Random64MU32) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  SKIP_OVER_TEST_MAX_KEYS(std::size_t{64} << 20);
  const std::vector<std::uint32_t> keys = MakeInput<std::uint32_t>(Pattern::kRandom, std::size_t{64} << 20, 64);
  const KeySortResult<std::uint32_t> got =
      RunKeySort<std::uint32_t>(kernels::MergeSortTempBytes, kernels::MergeSort, keys, false);
  ASSERT_TRUE(got.status.ok()) << got.status.message();
  std::vector<std::uint32_t> want = keys;
  std::sort(want.begin(), want.end());  // keys alone: any sort's answer is the stable one
  ASSERT_EQ(got.keys, want);
}

TEST(MergeSortTest, TiedU64WithPositions16M) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  SKIP_OVER_TEST_MAX_KEYS(std::size_t{16} << 20);
  // Only the top 20 bits vary: about 16 copies of each key, spread over every merge pass, with the
  // high word deciding (the 64-bit comparison's upper half).
  std::mt19937_64 rng(16);
  std::vector<std::uint64_t> keys(std::size_t{16} << 20);
  for (auto& k : keys) k = rng() & ~((std::uint64_t{1} << 44) - 1);
  ExpectMatchesReference(keys, true);
}

TEST(MergeSortTest, SingleTileNeedsNoTemp) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  kernels::KeySortArgs args;
  args.count = kTile32;
  std::size_t bytes = 1;
  ASSERT_TRUE(kernels::MergeSortTempBytes(args, &bytes).ok());
  EXPECT_EQ(bytes, 0u);
  args.count = kTile32 + 1;
  ASSERT_TRUE(kernels::MergeSortTempBytes(args, &bytes).ok());
  EXPECT_GE(bytes, (kTile32 + 1) * sizeof(std::uint32_t));
}

TEST(MergeSortTest, RejectsShortTempAndTooManyKeys) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  const std::vector<std::uint32_t> keys = MakeInput<std::uint32_t>(Pattern::kRandom, 3 * kTile32, 3);
  auto short_temp = [](const kernels::KeySortArgs& args, std::size_t* bytes) {
    kernels::Status s = kernels::MergeSortTempBytes(args, bytes);
    *bytes -= 1;
    return s;
  };
  const KeySortResult<std::uint32_t> got = RunKeySort<std::uint32_t>(short_temp, kernels::MergeSort, keys, true);
  EXPECT_EQ(got.status.code(), kernels::StatusCode::kInvalidArgument);

  kernels::KeySortArgs args;
  args.count = static_cast<std::size_t>(INT_MAX) + 1;
  std::size_t bytes = 0;
  EXPECT_EQ(kernels::MergeSortTempBytes(args, &bytes).code(), kernels::StatusCode::kInvalidArgument);
}

// kernels::MergeTwoSortedRuns (the split-upload sort's merge): two sorted runs one after the other,
// merged on the device, against std::merge; first runs of every length from empty to all the keys,
// tiles' edges, and ties across the runs (keys from a few values).
// With `slices` > 1 the merge runs as that many MergeTwoSortedRunsSlice calls of uneven sizes (bounds
// inside tiles, the split-upload sort's answer leaving in slices), which must write the same keys.
template <typename Key>
void ExpectMergesLikeStdMerge(std::size_t count, std::size_t first, Pattern pattern, int slices = 1) {
  const std::string what = std::to_string(sizeof(Key) * 8) + "-bit " + PatternName(pattern) +
                           " count=" + std::to_string(count) + " first=" + std::to_string(first) +
                           " slices=" + std::to_string(slices);
  std::vector<Key> runs = MakeInput<Key>(pattern, count, count + first);
  std::sort(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(first));
  std::sort(runs.begin() + static_cast<std::ptrdiff_t>(first), runs.end());
  std::vector<Key> want(count);
  std::merge(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(first),
             runs.begin() + static_cast<std::ptrdiff_t>(first), runs.end(), want.begin());
  testing::KernelDevice& d = *testing::Device();
  kernels::DeviceAllocation in, out;
  const std::size_t bytes = std::max<std::size_t>(1, count * sizeof(Key));
  ASSERT_TRUE(d.pool.Allocate(bytes, d.stream, &in).ok()) << what;
  ASSERT_TRUE(d.pool.Allocate(bytes, d.stream, &out).ok()) << what;
  ASSERT_TRUE(kernels::CopyToDeviceAsync(in.data(), runs.data(), count * sizeof(Key), d.stream).ok()) << what;
  const kernels::KeyWidth width = sizeof(Key) == 4 ? kernels::KeyWidth::k32 : kernels::KeyWidth::k64;
  if (slices <= 1) {
    const kernels::Status merged = kernels::MergeTwoSortedRuns(width, in.data(), first, count, out.data(), d.stream);
    ASSERT_TRUE(merged.ok()) << what << ": " << merged.message();
  }
  for (int s = 0; s < slices && slices > 1; ++s) {  // slice s ends at count * (s + 1)^2 / slices^2
    const auto bound = [&](int i) {
      return count * static_cast<std::size_t>(i * i) / static_cast<std::size_t>(slices * slices);
    };
    const kernels::Status merged =
        kernels::MergeTwoSortedRunsSlice(width, in.data(), first, count, out.data(), bound(s), bound(s + 1), d.stream);
    ASSERT_TRUE(merged.ok()) << what << " slice " << s << ": " << merged.message();
  }
  std::vector<Key> got(count);
  ASSERT_TRUE(kernels::CopyToHostAsync(got.data(), out.data(), count * sizeof(Key), d.stream).ok()) << what;
  ASSERT_TRUE(d.stream.Synchronize().ok()) << what;
  ASSERT_TRUE(got == want) << what;
}

TEST(MergeTwoSortedRuns, MergesLikeStdMerge) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  for (Pattern pattern : {Pattern::kRandom, Pattern::kFewDistinct, Pattern::kAllEqual, Pattern::kSorted}) {
    for (std::size_t count : {std::size_t{1}, std::size_t{2}, kTile32 - 1, kTile32, kTile32 + 1, 3 * kTile32 + 7,
                              (std::size_t{1} << 20) + 3}) {
      for (std::size_t first : {std::size_t{0}, std::size_t{1}, count / 3, count - count / 3, count - 1, count}) {
        if (first > count) continue;
        ExpectMergesLikeStdMerge<std::uint32_t>(count, first, pattern);
        ExpectMergesLikeStdMerge<std::uint64_t>(count, first, pattern);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
  ExpectMergesLikeStdMerge<std::uint32_t>(std::size_t{16} << 20, (std::size_t{16} << 20) - ((std::size_t{16} << 20) / 3),
                                          Pattern::kRandom);
}

TEST(MergeTwoSortedRuns, InSlicesMergesLikeStdMerge) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  for (Pattern pattern : {Pattern::kRandom, Pattern::kFewDistinct, Pattern::kAllEqual}) {
    for (std::size_t count : {std::size_t{5}, kTile32 + 1, 3 * kTile32 + 7, (std::size_t{1} << 20) + 3}) {
      for (std::size_t first : {std::size_t{0}, count / 3, count - count / 6, count}) {
        for (int slices : {2, 3, 8}) {
          ExpectMergesLikeStdMerge<std::uint32_t>(count, first, pattern, slices);
          ExpectMergesLikeStdMerge<std::uint64_t>(count, first, pattern, slices);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(MergeTwoSortedRuns, RefusesWhatItCannotMerge) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  testing::KernelDevice& d = *testing::Device();
  EXPECT_EQ(kernels::MergeTwoSortedRuns(kernels::KeyWidth::k32, nullptr, 5, 4, nullptr, d.stream).code(),
            kernels::StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::MergeTwoSortedRuns(kernels::KeyWidth::k32, nullptr, 0, static_cast<std::size_t>(INT_MAX) + 1,
                                        nullptr, d.stream)
                .code(),
            kernels::StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::MergeTwoSortedRuns(kernels::KeyWidth::k16, nullptr, 0, 4, nullptr, d.stream).code(),
            kernels::StatusCode::kInvalidArgument);
  EXPECT_TRUE(kernels::MergeTwoSortedRuns(kernels::KeyWidth::k32, nullptr, 0, 0, nullptr, d.stream).ok());
  // A slice outside the keys, or ending before it begins; an empty slice is nothing to do.
  EXPECT_EQ(kernels::MergeTwoSortedRunsSlice(kernels::KeyWidth::k32, nullptr, 2, 4, nullptr, 3, 2, d.stream).code(),
            kernels::StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::MergeTwoSortedRunsSlice(kernels::KeyWidth::k32, nullptr, 2, 4, nullptr, 0, 5, d.stream).code(),
            kernels::StatusCode::kInvalidArgument);
  EXPECT_TRUE(kernels::MergeTwoSortedRunsSlice(kernels::KeyWidth::k32, nullptr, 2, 4, nullptr, 3, 3, d.stream).ok());
}

}  // namespace
}  // namespace gpusort
