// BitonicSort and BitonicSortRows (kernels/comparison_sorts.h) against std::stable_sort.
//
// Whole arrays: every pattern and edge size, sizes just past the 4096-key tile (where the padded array
// moves to temp and the global passes of one to four strides begin), and 64M random 32-bit keys.
// Rows: every row length that picks a different layout (one lane, a few lanes, one warp with 8 to 32
// registers, a block through shared memory), many rows of each, every pattern, both widths, with and
// without (row-relative) positions, each row against std::stable_sort of that row; millions of rows;
// whole rows of every power-of-two length a warp holds, in 16-byte vectors and shifted off their
// alignment; and rows longer than kBitonicRowsMaxLength refused. Skips when no GPU is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/memory.h"
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

template <typename Key>
void ExpectMatchesReference(const std::vector<Key>& keys, bool with_positions) {
  testing::ExpectKeySortMatchesReference<Key>(kernels::BitonicSortTempBytes, kernels::BitonicSort, keys, with_positions);
}

TEST(BitonicSortTest, SortsLikeStableSort) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  ExpectSortsLikeStableSort(kernels::BitonicSortTempBytes, kernels::BitonicSort, (1 << 20) + 1);
}

template <typename Key>
void ExpectSizesPastTheTileSort() {
  // 4096 keys are one tile sorted in place; past it the array is padded in temp, and each level adds
  // one global stride (four strides per pass at most, so 2^17 and 2^18 need passes of 1 to 4 strides).
  const std::size_t sizes[] = {4097, 6000, 8191, 8192, 8193, 12289, 65537, (1 << 17) - 3, (1 << 18) + 1};
  for (Pattern pattern : {Pattern::kRandom, Pattern::kFewDistinct, Pattern::kReversed, Pattern::kAllEqual}) {
    for (std::size_t n : sizes) {
      for (bool with_positions : {false, true}) {
        SCOPED_TRACE(PatternName(pattern) + " n=" + std::to_string(n) + " bits=" +
                     std::to_string(sizeof(Key) * 8) + (with_positions ? " positions" : ""));
        ExpectMatchesReference(MakeInput<Key>(pattern, n, n + 3), with_positions);
      }
    }
  }
}

TEST(BitonicSortTest, SizesPastTheTile) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  ExpectSizesPastTheTileSort<std::uint32_t>();
  ExpectSizesPastTheTileSort<std::uint64_t>();
}

// With positions, the stable answer is: keys ascending, positions a permutation, each key the input's
// key at its position, and equal keys in ascending position order. Checked in O(n), without sorting
// 64M indices on the host.
void ExpectStableArgsort(const std::vector<std::uint32_t>& input, const KeySortResult<std::uint32_t>& got) {
  ASSERT_EQ(got.keys.size(), input.size());
  ASSERT_EQ(got.positions.size(), input.size());
  std::vector<bool> seen(input.size(), false);
  for (std::size_t i = 0; i < input.size(); ++i) {
    const std::uint32_t p = got.positions[i];
    ASSERT_LT(p, input.size()) << "at " << i;
    ASSERT_FALSE(seen[p]) << "position " << p << " twice";
    seen[p] = true;
    ASSERT_EQ(got.keys[i], input[p]) << "at " << i;
    if (i > 0) {
      ASSERT_LE(got.keys[i - 1], got.keys[i]) << "at " << i;
      if (got.keys[i - 1] == got.keys[i]) {
        ASSERT_LT(got.positions[i - 1], p) << "at " << i;
      }
    }
  }
}

TEST(BitonicSortTest, Random64MU32) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  SKIP_OVER_TEST_MAX_KEYS(std::size_t{64} << 20);
  const std::vector<std::uint32_t> keys = MakeInput<std::uint32_t>(Pattern::kRandom, std::size_t{64} << 20, 64);
  std::vector<std::uint32_t> want = keys;
  std::sort(want.begin(), want.end());  // keys alone: any sort's answer is the stable one
  {
    const KeySortResult<std::uint32_t> got =
        RunKeySort<std::uint32_t>(kernels::BitonicSortTempBytes, kernels::BitonicSort, keys, false);
    ASSERT_TRUE(got.status.ok()) << got.status.message();
    ASSERT_EQ(got.keys, want);
  }
  // 64M random 32-bit keys hold about half a million repeated values: the positions must order them.
  const KeySortResult<std::uint32_t> got =
      RunKeySort<std::uint32_t>(kernels::BitonicSortTempBytes, kernels::BitonicSort, keys, true);
  ASSERT_TRUE(got.status.ok()) << got.status.message();
  ASSERT_EQ(got.keys, want);
  ExpectStableArgsort(keys, got);
}

TEST(BitonicSortTest, TempOnlyPastOneTileAndCountLimit) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  kernels::KeySortArgs args;
  std::size_t bytes = 1;
  args.count = 4096;
  ASSERT_TRUE(kernels::BitonicSortTempBytes(args, &bytes).ok());
  EXPECT_EQ(bytes, 0u);
  args.count = 4097;  // padded to 8192
  ASSERT_TRUE(kernels::BitonicSortTempBytes(args, &bytes).ok());
  EXPECT_GE(bytes, 8192 * sizeof(std::uint32_t));
  args.count = static_cast<std::size_t>(INT_MAX) + 1;
  EXPECT_EQ(kernels::BitonicSortTempBytes(args, &bytes).code(), kernels::StatusCode::kInvalidArgument);
}

TEST(BitonicSortTest, RejectsShortTemp) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  const std::vector<std::uint32_t> keys = MakeInput<std::uint32_t>(Pattern::kRandom, 10000, 3);
  auto short_temp = [](const kernels::KeySortArgs& args, std::size_t* bytes) {
    kernels::Status s = kernels::BitonicSortTempBytes(args, bytes);
    *bytes -= 1;
    return s;
  };
  const KeySortResult<std::uint32_t> got = RunKeySort<std::uint32_t>(short_temp, kernels::BitonicSort, keys, true);
  EXPECT_EQ(got.status.code(), kernels::StatusCode::kInvalidArgument);
}

// ---- Rows ----

template <typename Key>
struct RowsResult {
  kernels::Status status;
  std::vector<Key> keys;
  std::vector<std::uint32_t> positions;  // empty unless asked for
};

// BitonicSortRows on a copy of `keys` (rows * row_length, row-major); positions poisoned first.
// `shift` moves the keys (and positions) that many elements past the start of their allocations, off the
// 16-byte alignment that whole rows load and store in vectors with (the tile pass's other path).
template <typename Key>
RowsResult<Key> RunRows(const std::vector<Key>& keys, std::size_t rows, std::size_t row_length,
                        bool with_positions, std::size_t shift = 0) {
  KernelDevice& d = *Device();
  RowsResult<Key> out;
  const std::size_t n = rows * row_length;
  auto check = [&](kernels::Status s) {
    if (out.status.ok() && !s.ok()) out.status = s;
    return s.ok();
  };
  kernels::KeyRowsArgs args;
  args.key_width = testing::WidthOf<Key>();
  args.rows = rows;
  args.row_length = row_length;
  kernels::DeviceAllocation key_buffer, position_buffer, temp;
  if (!check(d.pool.Allocate(std::max<std::size_t>(1, (n + shift) * sizeof(Key)), d.stream, &key_buffer))) {
    return out;
  }
  args.keys = static_cast<char*>(key_buffer.data()) + shift * sizeof(Key);
  if (with_positions) {
    if (!check(d.pool.Allocate(std::max<std::size_t>(1, (n + shift) * 4), d.stream, &position_buffer))) return out;
    args.positions = position_buffer.as<std::uint32_t>() + shift;
    std::vector<std::uint32_t> poison(n, 0xDEADBEEF);
    if (!check(kernels::CopyToDeviceAsync(args.positions, poison.data(), n * 4, d.stream))) return out;
    if (!check(d.stream.Synchronize())) return out;
  }
  std::size_t temp_bytes = 0;
  if (!check(kernels::BitonicSortRowsTempBytes(args, &temp_bytes))) return out;
  if (!check(d.pool.Allocate(std::max<std::size_t>(1, temp_bytes), d.stream, &temp))) return out;
  if (!check(kernels::CopyToDeviceAsync(args.keys, keys.data(), n * sizeof(Key), d.stream))) return out;
  if (!check(kernels::BitonicSortRows(args, temp.data(), temp_bytes, d.stream))) return out;
  out.keys.resize(n);
  if (!check(kernels::CopyToHostAsync(out.keys.data(), args.keys, n * sizeof(Key), d.stream))) return out;
  if (with_positions) {
    out.positions.resize(n);
    if (!check(kernels::CopyToHostAsync(out.positions.data(), args.positions, n * 4, d.stream))) return out;
  }
  check(d.stream.Synchronize());
  return out;
}

// Each row against std::stable_sort of that row (positions 0..row_length-1).
template <typename Key>
void ExpectRowsSorted(const std::vector<Key>& keys, std::size_t rows, std::size_t row_length,
                      bool with_positions, std::size_t shift = 0) {
  if (testing::OverTestMaxKeys(keys.size())) return;
  const RowsResult<Key> got = RunRows(keys, rows, row_length, with_positions, shift);
  ASSERT_TRUE(got.status.ok()) << got.status.message();
  ASSERT_EQ(got.keys.size(), keys.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const auto begin = keys.begin() + static_cast<std::ptrdiff_t>(r * row_length);
    const std::vector<Key> row(begin, begin + static_cast<std::ptrdiff_t>(row_length));
    const KeySortResult<Key> want = ReferenceKeySort(row, with_positions);
    const auto got_begin = got.keys.begin() + static_cast<std::ptrdiff_t>(r * row_length);
    ASSERT_TRUE(std::equal(want.keys.begin(), want.keys.end(), got_begin)) << "row " << r;
    if (with_positions) {
      const auto pos_begin = got.positions.begin() + static_cast<std::ptrdiff_t>(r * row_length);
      ASSERT_TRUE(std::equal(want.positions.begin(), want.positions.end(), pos_begin)) << "row " << r;
    }
  }
}

// Row lengths: one key; one lane; a few lanes; one warp of 8 and of 32 registers (1000 pads to 1024);
// blocks of 128 and 256 threads with strides through shared memory (1500 pads to 2048).
constexpr std::size_t kRowLengths[] = {1, 2, 5, 31, 256, 1000, 1024, 1500, 4096};

template <typename Key>
void ExpectEveryRowLengthSorts() {
  for (std::size_t row_length : kRowLengths) {
    // About 2^18 keys per case, and an odd number of rows so that the last block is partly empty.
    const std::size_t rows = std::max<std::size_t>(3, (std::size_t{1} << 18) / row_length) | 1;
    for (Pattern pattern : testing::kAllPatterns) {
      for (bool with_positions : {false, true}) {
        SCOPED_TRACE(PatternName(pattern) + " rows=" + std::to_string(rows) + " row_length=" +
                     std::to_string(row_length) + " bits=" + std::to_string(sizeof(Key) * 8) +
                     (with_positions ? " positions" : ""));
        const std::vector<Key> keys = MakeInput<Key>(pattern, rows * row_length, rows + row_length);
        ExpectRowsSorted(keys, rows, row_length, with_positions);
      }
    }
  }
}

TEST(BitonicSortRowsTest, EveryRowSortsLikeStableSort) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  ExpectEveryRowLengthSorts<std::uint32_t>();
  ExpectEveryRowLengthSorts<std::uint64_t>();
}

// Rows that are each one of a few patterns (sorted, reversed, all equal, organ pipe, a few distinct
// values), so that every row, not only the whole buffer, carries the pattern.
template <typename Key>
std::vector<Key> PatternedRows(std::size_t rows, std::size_t row_length) {
  std::vector<Key> keys(rows * row_length);
  std::mt19937_64 rng(rows * 31 + row_length);
  for (std::size_t r = 0; r < rows; ++r) {
    Key* row = keys.data() + r * row_length;
    switch (r % 5) {
      case 0: for (std::size_t i = 0; i < row_length; ++i) row[i] = static_cast<Key>(i); break;
      case 1: for (std::size_t i = 0; i < row_length; ++i) row[i] = static_cast<Key>(row_length - i); break;
      case 2: for (std::size_t i = 0; i < row_length; ++i) row[i] = static_cast<Key>(~Key{0}); break;
      case 3:
        for (std::size_t i = 0; i < row_length; ++i) row[i] = static_cast<Key>(std::min(i, row_length - i));
        break;
      default: for (std::size_t i = 0; i < row_length; ++i) row[i] = static_cast<Key>(rng() % 3); break;
    }
  }
  return keys;
}

TEST(BitonicSortRowsTest, PatternedRows) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  for (std::size_t row_length : kRowLengths) {
    const std::size_t rows = std::max<std::size_t>(5, (std::size_t{1} << 17) / row_length) + 2;
    for (bool with_positions : {false, true}) {
      SCOPED_TRACE("row_length=" + std::to_string(row_length) + (with_positions ? " positions" : ""));
      ExpectRowsSorted(PatternedRows<std::uint32_t>(rows, row_length), rows, row_length, with_positions);
      ExpectRowsSorted(PatternedRows<std::uint64_t>(rows, row_length), rows, row_length, with_positions);
    }
  }
}

// Rows of every power-of-two length that one warp holds (2 to 1024 keys: one lane of 2, 4 or 8 registers,
// several lanes, one warp of 8, 16 or 32): whole tiles, which load and store each lane's keys in 16-byte
// vectors where the layout allows (and the 8-key network sorts lanes of 8 32-bit keys); the same rows
// shifted off the vectors' alignment by one key, which take the general path; an odd number of rows, so
// that the last block has lanes of no row; both widths, with and without positions.
TEST(BitonicSortRowsTest, WholeRowsInVectorsAndOffTheirAlignment) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  for (std::size_t row_length = 2; row_length <= 1024; row_length *= 2) {
    const std::size_t rows = std::max<std::size_t>(3, (std::size_t{1} << 16) / row_length) | 1;
    for (Pattern pattern : {Pattern::kRandom, Pattern::kFewDistinct, Pattern::kReversed}) {
      for (bool with_positions : {false, true}) {
        for (std::size_t shift : {0, 1}) {
          SCOPED_TRACE(PatternName(pattern) + " rows=" + std::to_string(rows) + " row_length=" +
                       std::to_string(row_length) + (with_positions ? " positions" : "") +
                       (shift != 0 ? " shifted" : ""));
          ExpectRowsSorted(MakeInput<std::uint32_t>(pattern, rows * row_length, rows), rows, row_length,
                           with_positions, shift);
          ExpectRowsSorted(MakeInput<std::uint64_t>(pattern, rows * row_length, rows), rows, row_length,
                           with_positions, shift);
        }
      }
    }
  }
}

TEST(BitonicSortRowsTest, IssueShapes) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  // The shapes the performance targets name: 65536 x 256 and 16384 x 1024 32-bit keys.
  for (auto [rows, row_length] : {std::pair<std::size_t, std::size_t>{65536, 256}, {16384, 1024}}) {
    for (bool with_positions : {false, true}) {
      SCOPED_TRACE("rows=" + std::to_string(rows) + " row_length=" + std::to_string(row_length) +
                   (with_positions ? " positions" : ""));
      ExpectRowsSorted(MakeInput<std::uint32_t>(Pattern::kRandom, rows * row_length, 9), rows, row_length,
                       with_positions);
    }
  }
}

TEST(BitonicSortRowsTest, ManyRows) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  // A block per 256 rows of 2 keys, per 64 rows of 31, per row of 1025 (over 65535 blocks): millions
  // of rows, the last block partly empty.
  ExpectRowsSorted(MakeInput<std::uint32_t>(Pattern::kFewDistinct, ((std::size_t{1} << 21) + 3) * 2, 2),
                   (std::size_t{1} << 21) + 3, 2, true);
  ExpectRowsSorted(MakeInput<std::uint32_t>(Pattern::kRandom, (64 * 8192 + 5) * std::size_t{31}, 31),
                   64 * 8192 + 5, 31, true);
  ExpectRowsSorted(MakeInput<std::uint32_t>(Pattern::kRandom, std::size_t{70001} * 1025, 1025), 70001, 1025,
                   true);
}

TEST(BitonicSortRowsTest, NothingToSort) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  for (auto [rows, row_length] : {std::pair<std::size_t, std::size_t>{0, 100}, {100, 0}, {0, 0}}) {
    kernels::KeyRowsArgs args;
    args.rows = rows;
    args.row_length = row_length;
    std::size_t bytes = 1;
    ASSERT_TRUE(kernels::BitonicSortRowsTempBytes(args, &bytes).ok());
    EXPECT_TRUE(kernels::BitonicSortRows(args, nullptr, bytes, Device()->stream).ok());
  }
  EXPECT_TRUE(Device()->stream.Synchronize().ok());
}

TEST(BitonicSortRowsTest, RejectsRowsLongerThanTheLimit) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  const std::size_t too_long = kernels::kBitonicRowsMaxLength + 1;
  const RowsResult<std::uint32_t> got =
      RunRows(MakeInput<std::uint32_t>(Pattern::kRandom, 4 * too_long, 1), 4, too_long, false);
  EXPECT_EQ(got.status.code(), kernels::StatusCode::kInvalidArgument);

  kernels::KeyRowsArgs args;
  args.rows = 1;
  args.row_length = too_long;
  std::size_t bytes = 0;
  EXPECT_EQ(kernels::BitonicSortRowsTempBytes(args, &bytes).code(), kernels::StatusCode::kInvalidArgument);
  EXPECT_EQ(kernels::BitonicSortRows(args, nullptr, 0, Device()->stream).code(),
            kernels::StatusCode::kInvalidArgument);
  // More than 2^31 - 1 keys in all.
  args.rows = std::size_t{1} << 20;
  args.row_length = 4096;
  EXPECT_EQ(kernels::BitonicSortRowsTempBytes(args, &bytes).code(), kernels::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpusort
