// RADIX_SELECT top-k (kernels/top_k.h) against the stable-sort reference of top_k_harness.h: every input
// pattern at sizes around powers of two, k from 1 to n, both key widths, sorted and unsorted, several rows,
// the paths the kernel chooses between (direct refinement over short rows; sampled threshold with the
// candidates, and its fallbacks when the sample misjudges), ties at the k-th key, float and double keys
// through ToOrderedBits (NaN, inf, -0.0, crowded [0, 1) exponents), bad arguments, and 256M keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpusort/kernels/top_k.h"
#include "server/core/key_order.h"
#include "tests/gpu/top_k_harness.h"
#include "tests/support/inputs.h"

namespace gpusort::testing {
namespace {

using kernels::RadixSelectTopK;
using kernels::RadixSelectTopKTempBytes;

template <typename Key>
void Expect(const std::vector<Key>& keys, std::size_t rows, std::size_t k, bool sorted) {
  SCOPED_TRACE("bits=" + std::to_string(sizeof(Key) * 8) + " rows=" + std::to_string(rows) +
               " n=" + std::to_string(keys.size() / rows) + " k=" + std::to_string(k) +
               (sorted ? " sorted" : " unsorted"));
  ExpectTopKMatchesReference<Key>(RadixSelectTopKTempBytes, RadixSelectTopK, keys, rows, k, sorted);
}

// Floats or doubles as the ordered bits the server hands the kernels.
template <typename T>
std::vector<OrderedBitsType<T>> ToBits(const std::vector<T>& values) {
  std::vector<OrderedBitsType<T>> bits(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) bits[i] = ToOrderedBits(values[i]);
  return bits;
}

// k values worth checking for a row of n: the ends, a few small ones, the middle. The ones that make the
// CPU reference sort most of a long row come only with `all`.
std::vector<std::size_t> KsFor(std::size_t n, bool all) {
  std::vector<std::size_t> ks = {1, 2, 3, 10, 100, 1000, 30000};
  if (all || n <= 65537) ks.insert(ks.end(), {n / 2, n - 2, n - 1, n});
  std::vector<std::size_t> out;
  for (std::size_t k : ks) {
    if (k >= 1 && k <= n && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  return out;
}

constexpr std::size_t kSizes[] = {1, 2, 31, 32, 33, 1023, 1025, 4095, 4097, 65537, (std::size_t{1} << 20) + 1};

template <typename Key>
void EveryPattern() {
  for (Pattern pattern : kAllPatterns) {
    for (std::size_t n : kSizes) {
      SCOPED_TRACE(PatternName(pattern));
      const std::vector<Key> keys = MakeInput<Key>(pattern, n, n + 3);
      const bool all = pattern == Pattern::kRandom || pattern == Pattern::kAllEqual;
      int i = 0;
      for (std::size_t k : KsFor(n, all)) {
        Expect(keys, 1, k, i++ % 3 != 2);  // every third unsorted
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST(RadixSelectTopKTest, EveryPatternU32) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  EveryPattern<std::uint32_t>();
}

TEST(RadixSelectTopKTest, EveryPatternU64) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  EveryPattern<std::uint64_t>();
}

// 16-bit keys read as they are (KeyWidth::k16): at most 65536 distinct values, so long rows hold every
// value many times and the tie cap of the filter decides most answers.
TEST(RadixSelectTopKTest, EveryPatternU16) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  EveryPattern<std::uint16_t>();
}

// NaNs of both signs, +-inf, +-0.0, denormals: ordinary ordered bits to the kernel.
TEST(RadixSelectTopKTest, FloatAndDoubleSpecials) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  for (std::size_t n : {std::size_t{33}, std::size_t{4097}, (std::size_t{1} << 20) + 1}) {
    for (Pattern pattern : {Pattern::kSpecials, Pattern::kRandom, Pattern::kFewDistinct}) {
      const auto f = ToBits(MakeInput<float>(pattern, n, 11));
      const auto d = ToBits(MakeInput<double>(pattern, n, 12));
      for (std::size_t k : {std::size_t{1}, std::size_t{17}, std::size_t{1000}, n - 1}) {
        if (k < 1 || k > n) continue;
        Expect(f, 1, k, true);
        Expect(d, 1, k, k != 17);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// torch.rand-like [0, 1) floats crowd into a few exponents; largest-first complements the bits.
TEST(RadixSelectTopKTest, CrowdedUnitFloats) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  std::mt19937_64 rng(5);
  for (std::size_t n : {std::size_t{300000}, std::size_t{3} << 20}) {
    std::vector<float> f(n);
    std::vector<double> d(n);
    for (std::size_t i = 0; i < n; ++i) {
      f[i] = static_cast<float>(rng() >> 40) * 0x1.0p-24f;  // 24 random bits, as torch.rand
      d[i] = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    }
    auto fb = ToBits(f);
    auto db = ToBits(d);
    for (int largest = 0; largest < 2; ++largest) {
      for (std::size_t k : {std::size_t{1}, std::size_t{100}, std::size_t{1000}, std::size_t{100000}}) {
        Expect(fb, 1, k, true);
        Expect(db, 1, k, k != 1000);
        if (HasFatalFailure()) return;
      }
      for (auto& x : fb) x = ~x;
      for (auto& x : db) x = ~x;
    }
  }
}

// The k-th key has many equals before and after it in the row: the earliest equals must win. Small k
// with a few thousand equals (the candidates hold them), with more equals than the candidate buffer
// holds (the fallback over the row), and a middle k over heavy duplicates.
template <typename Key>
void TiesAtTheKth() {
  const std::size_t n = (std::size_t{1} << 20) + 1;
  std::mt19937_64 rng(9);
  for (std::size_t copies : {std::size_t{5000}, std::size_t{200000}}) {
    std::vector<Key> keys(n);
    for (auto& x : keys) x = static_cast<Key>(1000 + rng() % (static_cast<Key>(~Key{0}) - 1000));
    for (std::size_t i = 0; i < 10; ++i) keys[rng() % n] = static_cast<Key>(i);  // 10 keys below 500
    std::size_t placed = 0;
    while (placed < copies) {
      const std::size_t at = rng() % n;
      if (keys[at] >= 1000) {
        keys[at] = 500;
        ++placed;
      }
    }
    std::size_t below = 0;
    for (Key x : keys) below += x < 500;
    for (std::size_t k : {below + 1, below + copies / 2, below + copies - 1, below + copies}) {
      Expect(keys, 1, k, true);
      Expect(keys, 1, k, false);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  std::vector<Key> keys(n);
  for (auto& x : keys) x = static_cast<Key>(rng() % 1000);
  std::size_t below = 0, equal = 0;
  for (Key x : keys) {
    below += x < 500;
    equal += x == 500;
  }
  Expect(keys, 1, below + equal / 2, true);
}

TEST(RadixSelectTopKTest, TiesAtTheKthU32) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  TiesAtTheKth<std::uint32_t>();
}

TEST(RadixSelectTopKTest, TiesAtTheKthU64) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  TiesAtTheKth<std::uint64_t>();
}

TEST(RadixSelectTopKTest, TiesAtTheKthU16) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  TiesAtTheKth<std::uint16_t>();
}

// bfloat16 in [0, 1) as torch.rand draws it (8 random bits: each value about n / 256 times), largest
// first: the k-th key has tens of thousands of equals spread over the whole row, more than the sample's
// buffer holds, so only the filter's per-warp cap keeps the candidates few. Rows long enough to take the
// sampled path, one of them 16M keys with its head unaligned (the row starts one key into the buffer).
TEST(RadixSelectTopKTest, CrowdedBfloat16LargestFirst) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  std::mt19937_64 rng(21);
  for (std::size_t n : {std::size_t{300001}, (std::size_t{1} << 22) + 3, (std::size_t{1} << 24) + 1}) {
    SKIP_OVER_TEST_MAX_KEYS(n);
    std::vector<std::uint16_t> keys(n);
    for (auto& x : keys) {
      const float f = static_cast<float>(rng() >> 56) * 0x1.0p-8f;  // 8 random bits in [0, 1)
      x = static_cast<std::uint16_t>(~ToOrderedBits(BFloat16{static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(f) >> 16)}));
    }
    for (std::size_t k : {std::size_t{1}, std::size_t{50}, std::size_t{100}, std::size_t{1000}, std::size_t{5000}}) {
      Expect(keys, 1, k, true);
      Expect(keys, 1, k, k != 100);
      if (HasFatalFailure()) return;
    }
    const std::vector<std::uint16_t> three_rows(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n / 3 * 3));
    Expect(three_rows, 3, 100, true);
  }
}

// All equal with k in the middle: only positions decide (the row of 2^20+1 also overflows the sample's
// candidate buffer).
TEST(RadixSelectTopKTest, AllEqualMiddleK) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  for (std::size_t n : {std::size_t{4097}, (std::size_t{1} << 20) + 1}) {
    const std::vector<std::uint32_t> a(n, 7);
    const std::vector<std::uint64_t> b(n, 7);
    for (std::size_t k : {std::size_t{100}, n / 2 + 1}) {
      Expect(a, 1, k, true);
      Expect(b, 1, k, false);
      if (HasFatalFailure()) return;
    }
  }
}

template <typename Key>
void SeveralRows() {
  struct Case {
    std::size_t rows, n, k;
  };
  const Case cases[] = {{1000, 1, 1},    {7, 2, 1},       {7, 2, 2},          {1000, 33, 5},   {3, 1025, 1},
                        {3, 1025, 1024}, {3, 1025, 1025}, {5, 4097, 100},     {5, 4097, 4097}, {3, 10000, 5000},
                        {70000, 2, 1},   {2, 300001, 10}, {2, 300001, 20000}, {600, 5000, 2500}};
  int i = 0;
  for (const Case& c : cases) {
    for (Pattern pattern : {Pattern::kRandom, Pattern::kFewDistinct}) {
      const std::vector<Key> keys = MakeInput<Key>(pattern, c.rows * c.n, c.n + 5);
      Expect(keys, c.rows, c.k, i++ % 2 == 0);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(RadixSelectTopKTest, SeveralRowsU32) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  SeveralRows<std::uint32_t>();
}

TEST(RadixSelectTopKTest, SeveralRowsU64) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  SeveralRows<std::uint64_t>();
}

TEST(RadixSelectTopKTest, SeveralRowsU16) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  SeveralRows<std::uint16_t>();
}

// Either output may be null; the other still holds the answer.
TEST(RadixSelectTopKTest, OneOutputOnly) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  KernelDevice& d = *Device();
  const std::size_t rows = 3, n = 70001, k = 3000;
  const std::vector<std::uint32_t> keys = MakeInput<std::uint32_t>(Pattern::kFewDistinct, rows * n, 4);
  const TopKResult<std::uint32_t> want = ReferenceTopK(keys, rows, k);
  for (int keep_keys = 0; keep_keys < 2; ++keep_keys) {
    kernels::TopKArgs args;
    args.rows = rows;
    args.row_length = n;
    args.k = k;
    kernels::DeviceAllocation input, out, temp;
    ASSERT_TRUE(d.pool.Allocate(keys.size() * 4, d.stream, &input).ok());
    ASSERT_TRUE(d.pool.Allocate(rows * k * 8, d.stream, &out).ok());
    ASSERT_TRUE(kernels::CopyToDeviceAsync(input.data(), keys.data(), keys.size() * 4, d.stream).ok());
    args.keys = input.data();
    if (keep_keys) args.out_keys = out.data();
    else args.out_positions = out.as<std::int64_t>();
    std::size_t bytes = 0;
    ASSERT_TRUE(RadixSelectTopKTempBytes(args, &bytes).ok());
    ASSERT_TRUE(d.pool.Allocate(std::max<std::size_t>(bytes, 1), d.stream, &temp).ok());
    ASSERT_TRUE(RadixSelectTopK(args, temp.data(), bytes, d.stream).ok());
    if (keep_keys) {
      std::vector<std::uint32_t> got(rows * k);
      ASSERT_TRUE(kernels::CopyToHostAsync(got.data(), out.data(), got.size() * 4, d.stream).ok());
      ASSERT_TRUE(d.stream.Synchronize().ok());
      EXPECT_EQ(got, want.keys);
    } else {
      std::vector<std::int64_t> got(rows * k);
      ASSERT_TRUE(kernels::CopyToHostAsync(got.data(), out.data(), got.size() * 8, d.stream).ok());
      ASSERT_TRUE(d.stream.Synchronize().ok());
      EXPECT_EQ(got, want.positions);
    }
  }
}

TEST(RadixSelectTopKTest, BadArgumentsAreInvalid) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  auto code_of = [](kernels::TopKArgs args) {
    std::size_t bytes = 0;
    return RadixSelectTopKTempBytes(args, &bytes).code();
  };
  kernels::TopKArgs args;
  args.row_length = 10;
  args.k = 0;
  EXPECT_EQ(code_of(args), kernels::StatusCode::kInvalidArgument);
  args.k = 11;
  EXPECT_EQ(code_of(args), kernels::StatusCode::kInvalidArgument);
  args.k = 1;
  args.rows = std::size_t{1} << 28;
  EXPECT_EQ(code_of(args), kernels::StatusCode::kInvalidArgument);  // 2^28 * 10 keys
  args.rows = 1;
  args.row_length = 0;
  EXPECT_EQ(code_of(args), kernels::StatusCode::kInvalidArgument);
  // Too little temp, and no keys: refused before anything runs.
  KernelDevice& d = *Device();
  kernels::DeviceAllocation input, out;
  ASSERT_TRUE(d.pool.Allocate(4096 * 4, d.stream, &input).ok());
  ASSERT_TRUE(d.pool.Allocate(64 * 8, d.stream, &out).ok());
  args.row_length = 4096;
  args.k = 64;
  args.keys = input.data();
  args.out_positions = out.as<std::int64_t>();
  std::size_t bytes = 0;
  ASSERT_TRUE(RadixSelectTopKTempBytes(args, &bytes).ok());
  ASSERT_GT(bytes, 0u);
  EXPECT_EQ(RadixSelectTopK(args, out.data(), bytes - 1, d.stream).code(), kernels::StatusCode::kInvalidArgument);
  args.keys = nullptr;
  EXPECT_EQ(RadixSelectTopK(args, out.data(), bytes, d.stream).code(), kernels::StatusCode::kInvalidArgument);
}

// Raw keys (TopKArgs::raw_keys): the kernel reads the caller's own keys of each kind and turns them into
// ordered bits as it reads them; its answer is the reference's on those ordered bits (complemented for
// the largest first), positions and keys alike.
template <typename T>
void RawKeysGiveTheOrderedBitsAnswer(kernels::KeyKind kind) {
  using Key = OrderedBitsType<T>;
  for (Pattern pattern : {Pattern::kRandom, Pattern::kSpecials, Pattern::kFewDistinct, Pattern::kSorted}) {
    for (std::size_t n : {std::size_t{33}, std::size_t{4097}, (std::size_t{1} << 20) + 1}) {
      const std::vector<T> values = MakeInput<T>(pattern, n, n);
      for (bool complement : {false, true}) {
        std::vector<Key> raw(n), ordered(n);
        for (std::size_t i = 0; i < n; ++i) {
          std::memcpy(&raw[i], &values[i], sizeof(Key));
          ordered[i] = static_cast<Key>(ToOrderedBits(values[i]) ^ (complement ? static_cast<Key>(~Key{0}) : Key{0}));
        }
        TopKFn select = [&](const kernels::TopKArgs& args, void* temp, std::size_t bytes, const kernels::Stream& s) {
          kernels::TopKArgs raw_args = args;
          raw_args.raw_keys = true;
          raw_args.raw_kind = kind;
          raw_args.raw_complement = complement;
          return RadixSelectTopK(raw_args, temp, bytes, s);
        };
        for (std::size_t rows : {std::size_t{1}, std::size_t{3}}) {
          if (n % rows != 0) continue;
          for (std::size_t want_k : {std::size_t{1}, std::size_t{100}, std::size_t{3000}}) {
            const std::size_t k = std::min(want_k, n / rows);
            SCOPED_TRACE(PatternName(pattern) + " n=" + std::to_string(n) + " rows=" + std::to_string(rows) +
                         " k=" + std::to_string(k) + (complement ? " complemented" : ""));
            const TopKResult<Key> got = RunTopK<Key>(RadixSelectTopKTempBytes, select, raw, rows, k, true);
            ASSERT_TRUE(got.status.ok()) << got.status.message();
            const TopKResult<Key> want = ReferenceTopK(ordered, rows, k);
            ASSERT_EQ(got.positions, want.positions);
            ASSERT_EQ(got.keys, want.keys);
          }
        }
      }
    }
  }
}

TEST(RadixSelectTopKTest, RawKeysOfEveryKindAreOrderedAsTheyAreRead) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  RawKeysGiveTheOrderedBitsAnswer<float>(kernels::KeyKind::kFloat);
  RawKeysGiveTheOrderedBitsAnswer<double>(kernels::KeyKind::kFloat);
  RawKeysGiveTheOrderedBitsAnswer<std::int32_t>(kernels::KeyKind::kSigned);
  RawKeysGiveTheOrderedBitsAnswer<std::int64_t>(kernels::KeyKind::kSigned);
  RawKeysGiveTheOrderedBitsAnswer<std::uint32_t>(kernels::KeyKind::kUnsigned);
  RawKeysGiveTheOrderedBitsAnswer<BFloat16>(kernels::KeyKind::kFloat);
  RawKeysGiveTheOrderedBitsAnswer<Float16>(kernels::KeyKind::kFloat);
  RawKeysGiveTheOrderedBitsAnswer<std::int16_t>(kernels::KeyKind::kSigned);
  RawKeysGiveTheOrderedBitsAnswer<std::uint16_t>(kernels::KeyKind::kUnsigned);
}

// 256M keys (torch.rand-like floats, so ~16 copies of every value), k = 100000, checked against a
// reference built with nth_element on (key, position) pairs rather than the harness's partial sort.
TEST(RadixSelectTopKTest, Keys256M) {
  SKIP_WITHOUT_KERNEL_DEVICE();
  const std::size_t n = std::size_t{1} << 28, k = 100000;
  SKIP_OVER_TEST_MAX_KEYS(n);
  std::vector<std::uint32_t> keys(n);
  std::mt19937_64 rng(3);
  for (std::size_t i = 0; i < n; i += 2) {
    const std::uint64_t r = rng();
    keys[i] = ToOrderedBits(static_cast<float>(r >> 40) * 0x1.0p-24f);
    keys[i + 1] = ~ToOrderedBits(static_cast<float>(r & 0xFFFFFF) * 0x1.0p-24f);  // largest-first half
  }
  std::vector<std::uint64_t> pairs(n);  // key << 32 | position: its order is (key, position)
  for (std::size_t i = 0; i < n; ++i) pairs[i] = static_cast<std::uint64_t>(keys[i]) << 32 | i;
  std::nth_element(pairs.begin(), pairs.begin() + k - 1, pairs.end());
  std::sort(pairs.begin(), pairs.begin() + k);
  for (bool sorted : {true, false}) {
    TopKResult<std::uint32_t> got = RunTopK<std::uint32_t>(RadixSelectTopKTempBytes, RadixSelectTopK, keys, 1, k, sorted);
    ASSERT_TRUE(got.status.ok()) << got.status.message();
    if (!sorted) SortEachRowsResults(got, 1, k);
    for (std::size_t i = 0; i < k; ++i) {
      ASSERT_EQ(got.keys[i], pairs[i] >> 32) << i;
      ASSERT_EQ(got.positions[i], static_cast<std::int64_t>(pairs[i] & 0xFFFFFFFFu)) << i;
    }
  }
}

}  // namespace
}  // namespace gpusort::testing
