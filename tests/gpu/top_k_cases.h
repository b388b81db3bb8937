// The cases every top-k kernel of kernels/top_k.h is checked on (top_k_small_test.cc,
// top_k_thread_lists_test.cc), each against ReferenceTopK (top_k_harness.h): the first k of a stable
// sort of each row. A kernel is its TempBytes, its selection and its limit on k.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/top_k.h"
#include "server/core/key_order.h"
#include "tests/gpu/top_k_harness.h"
#include "tests/support/inputs.h"

namespace gpusort::testing {

struct TopKKernel {
  TopKTempFn temp_bytes;
  TopKFn select;
  std::size_t max_k;
  const char* max_k_name;  // what the refusal of a larger k must name
};

template <typename Key>
void ExpectMatches(const TopKKernel& kernel, const std::vector<Key>& keys, std::size_t rows, std::size_t k,
                   bool sorted) {
  ExpectTopKMatchesReference(kernel.temp_bytes, kernel.select, keys, rows, k, sorted);
}

// 1, 2, L - 1, L and the limit, those in 1..min(L, max_k).
inline std::vector<std::size_t> KsFor(std::size_t length, std::size_t max_k) {
  std::vector<std::size_t> ks;
  for (std::size_t k : {std::size_t{1}, std::size_t{2}, length - 1, length, max_k}) {
    if (k >= 1 && k <= length && k <= max_k && std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
  }
  return ks;
}

#define TOP_K_TRACE(what) SCOPED_TRACE(std::string(what) + " bits=" + std::to_string(sizeof(Key) * 8))

// Every pattern of tests/support/inputs.h, row lengths around powers of two, 1 and 3 rows, every k of
// KsFor, sorted and not.
template <typename Key>
void ExpectEveryPatternAndLength(const TopKKernel& kernel) {
  for (Pattern pattern : kAllPatterns) {
    for (std::size_t length : {1, 2, 31, 32, 33, 1023, 1024, 1025, 4095, 4097, 65537}) {
      for (std::size_t rows : {1, 3}) {
        const std::vector<Key> keys = MakeInput<Key>(pattern, rows * length, length * 7 + rows);
        for (std::size_t k : KsFor(length, kernel.max_k)) {
          for (bool sorted : {true, false}) {
            TOP_K_TRACE(PatternName(pattern) + " length=" + std::to_string(length) + " rows=" + std::to_string(rows) +
                        " k=" + std::to_string(k) + (sorted ? " sorted" : " unsorted"));
            ExpectMatches(kernel, keys, rows, k, sorted);
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// 1024 rows (many groups a launch, warp groups sharing blocks), rows of length 1 among them.
template <typename Key>
void ExpectManyRows(const TopKKernel& kernel) {
  for (Pattern pattern : {Pattern::kRandom, Pattern::kFewDistinct, Pattern::kAllEqual, Pattern::kReversed}) {
    for (std::size_t length : {1, 33, 257, 1024, 4097}) {
      const std::vector<Key> keys = MakeInput<Key>(pattern, 1024 * length, length + 5);
      for (std::size_t k : KsFor(length, kernel.max_k)) {
        if (k == 2) continue;
        TOP_K_TRACE(PatternName(pattern) + " rows=1024 length=" + std::to_string(length) + " k=" + std::to_string(k));
        ExpectMatches(kernel, keys, 1024, k, true);
        if (::testing::Test::HasFatalFailure()) return;
        ExpectMatches(kernel, keys, 1024, k, false);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// Rows where the k-th key has many equals before and after it (in position and in rank): `less` keys
// below V, `equal` copies of V, the rest above, shuffled. k cuts the equals at their start, inside and
// at their end. V = 0 (nothing can be below: less = 0), a middle value, and the largest key (equal to
// the padding the kernels use).
template <typename Key>
void ExpectTiesAroundTheKth(const TopKKernel& kernel) {
  const std::size_t max_k = kernel.max_k;
  for (std::size_t length : {std::size_t{4097}, std::size_t{65537}, std::size_t{(1 << 20) + 1}}) {
    for (int which : {0, 1, 2}) {
      const Key v = which == 0 ? Key{0} : which == 1 ? static_cast<Key>(Key{1} << (sizeof(Key) * 8 - 2)) : static_cast<Key>(~Key{0});
      const std::size_t less = which == 0 ? 0 : max_k / 2 - 3;
      const std::size_t equal = 2 * max_k;
      std::mt19937_64 rng(length + which);
      const std::size_t rows = length > 100000 ? 1 : 3;
      std::vector<Key> keys;
      for (std::size_t r = 0; r < rows; ++r) {
        std::vector<Key> row(length);
        // Keys above V: V + 1 + random below `above` (nothing is above the largest key: all equal).
        const Key above = which == 0 ? static_cast<Key>(sizeof(Key) == 2 ? 1000 : 1000000) : v;
        for (std::size_t i = 0; i < length; ++i) {
          if (i < less) {
            row[i] = static_cast<Key>(rng() % v);
          } else if (i < less + equal || which == 2) {
            row[i] = v;
          } else {
            row[i] = static_cast<Key>(v + 1 + rng() % above);
          }
        }
        std::shuffle(row.begin(), row.end(), rng);
        keys.insert(keys.end(), row.begin(), row.end());
      }
      for (std::size_t k : {less + 1, less + equal / 4, less + equal / 2, max_k, std::size_t{1}}) {
        if (k < 1 || k > max_k || k > length) continue;
        for (bool sorted : {true, false}) {
          TOP_K_TRACE("ties V#" + std::to_string(which) + " length=" + std::to_string(length) +
                      " k=" + std::to_string(k) + (sorted ? " sorted" : " unsorted"));
          ExpectMatches(kernel, keys, rows, k, sorted);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// One long row: 2^20 + 1 and 16M keys, so that slices and candidate levels run.
template <typename Key>
void ExpectLongRows(const TopKKernel& kernel, std::size_t length) {
  for (Pattern pattern : {Pattern::kRandom, Pattern::kFewDistinct, Pattern::kAllEqual, Pattern::kSorted,
                          Pattern::kReversed, Pattern::kOrganPipe}) {
    const std::vector<Key> keys = MakeInput<Key>(pattern, length, length + 11);
    for (std::size_t k : {std::size_t{1}, std::size_t{100}, kernel.max_k}) {
      TOP_K_TRACE(PatternName(pattern) + " one row of " + std::to_string(length) + " k=" + std::to_string(k));
      ExpectMatches(kernel, keys, 1, k, true);
      if (::testing::Test::HasFatalFailure()) return;
      if (k == kernel.max_k) ExpectMatches(kernel, keys, 1, k, false);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Floats and doubles with NaNs of both signs, infinities, -0.0 and denormals, as the server hands them
// over: ordered bits (ToOrderedBits), ascending and complemented (largest first).
template <typename Float>
void ExpectFloatSpecials(const TopKKernel& kernel) {
  using Key = OrderedBitsType<Float>;
  for (std::size_t length : {33, 1025, 4097}) {
    const std::vector<Float> values = MakeInput<Float>(Pattern::kSpecials, 3 * length, length);
    for (bool largest : {false, true}) {
      std::vector<Key> keys(values.size());
      for (std::size_t i = 0; i < values.size(); ++i) {
        keys[i] = ToOrderedBits(values[i]);
        if (largest) keys[i] = static_cast<Key>(~keys[i]);
      }
      for (std::size_t k : {std::size_t{1}, std::size_t{7}, std::min(length, kernel.max_k)}) {
        TOP_K_TRACE("specials length=" + std::to_string(length) + " k=" + std::to_string(k) +
                    (largest ? " largest" : " smallest"));
        ExpectMatches(kernel, keys, 3, k, true);
        if (::testing::Test::HasFatalFailure()) return;
        ExpectMatches(kernel, keys, 3, k, false);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// The shapes the benchmark times, with keys as it makes them: uniform floats in [0, 1) as ordered bits.
inline void ExpectBenchmarkShapes(const TopKKernel& kernel) {
  struct Shape {
    std::size_t rows, length, k;
  };
  for (Shape s : {Shape{1024, 4096, 10}, Shape{4096, 1024, 32}, Shape{65536, 256, 10}}) {
    std::mt19937 rng(static_cast<unsigned>(s.rows));
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    std::vector<std::uint32_t> keys(s.rows * s.length);
    for (auto& key : keys) key = ToOrderedBits(uniform(rng));
    SCOPED_TRACE("rows=" + std::to_string(s.rows) + " length=" + std::to_string(s.length) + " k=" + std::to_string(s.k));
    ExpectMatches(kernel, keys, s.rows, s.k, true);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Each output alone (the other null) still comes out right; both null is a no-op that succeeds.
template <typename Key>
void ExpectEitherOutputAlone(const TopKKernel& kernel) {
  KernelDevice& d = *Device();
  const std::size_t rows = 3, length = 70000, k = std::min<std::size_t>(kernel.max_k, 77);
  const std::vector<Key> keys = MakeInput<Key>(Pattern::kFewDistinct, rows * length, 5);
  const TopKResult<Key> want = ReferenceTopK(keys, rows, k);
  kernels::DeviceAllocation input, out_keys, out_positions, temp;
  ASSERT_TRUE(d.pool.Allocate(keys.size() * sizeof(Key), d.stream, &input).ok());
  ASSERT_TRUE(d.pool.Allocate(rows * k * sizeof(Key), d.stream, &out_keys).ok());
  ASSERT_TRUE(d.pool.Allocate(rows * k * 8, d.stream, &out_positions).ok());
  ASSERT_TRUE(kernels::CopyToDeviceAsync(input.data(), keys.data(), keys.size() * sizeof(Key), d.stream).ok());
  kernels::TopKArgs args;
  args.key_width = WidthOf<Key>();
  args.rows = rows;
  args.row_length = length;
  args.k = k;
  args.keys = input.data();
  std::size_t temp_bytes = 0;
  ASSERT_TRUE(kernel.temp_bytes(args, &temp_bytes).ok());
  ASSERT_TRUE(d.pool.Allocate(std::max<std::size_t>(1, temp_bytes), d.stream, &temp).ok());
  ASSERT_TRUE(kernel.select(args, temp.data(), temp_bytes, d.stream).ok());  // both null
  for (int alone = 0; alone < 2; ++alone) {
    args.out_keys = alone == 0 ? out_keys.data() : nullptr;
    args.out_positions = alone == 1 ? out_positions.as<std::int64_t>() : nullptr;
    ASSERT_TRUE(kernel.select(args, temp.data(), temp_bytes, d.stream).ok());
  }
  std::vector<Key> got_keys(rows * k);
  std::vector<std::int64_t> got_positions(rows * k);
  ASSERT_TRUE(kernels::CopyToHostAsync(got_keys.data(), out_keys.data(), rows * k * sizeof(Key), d.stream).ok());
  ASSERT_TRUE(kernels::CopyToHostAsync(got_positions.data(), out_positions.data(), rows * k * 8, d.stream).ok());
  ASSERT_TRUE(d.stream.Synchronize().ok());
  EXPECT_EQ(got_keys, want.keys);
  EXPECT_EQ(got_positions, want.positions);
}

// Bad arguments: kInvalidArgument with a message, before any device work (pointers below are never
// dereferenced: every call must be refused first).
inline void ExpectBadArgumentsRefused(const TopKKernel& kernel) {
  KernelDevice& d = *Device();
  std::uint32_t dummy = 0;
  kernels::TopKArgs good;
  good.rows = 4;
  good.row_length = 100;
  good.k = 5;
  good.keys = &dummy;
  // TempBytes looks at sizes alone (kernels/top_k.h), so it refuses only bad sizes.
  auto refused = [&](const kernels::TopKArgs& a, const std::string& must_name, bool sizes_bad = true) {
    std::size_t bytes = 0;
    const kernels::Status t = kernel.temp_bytes(a, &bytes);
    if (sizes_bad) {
      EXPECT_EQ(t.code(), kernels::StatusCode::kInvalidArgument) << must_name;
      EXPECT_NE(t.message().find(must_name), std::string::npos) << t.message();
    } else {
      EXPECT_TRUE(t.ok()) << t.message();
    }
    const kernels::Status s = kernel.select(a, &dummy, 1u << 30, d.stream);
    EXPECT_EQ(s.code(), kernels::StatusCode::kInvalidArgument) << must_name;
    EXPECT_NE(s.message().find(must_name), std::string::npos) << s.message();
  };
  kernels::TopKArgs a = good;
  a.row_length = 100000;
  a.k = kernel.max_k + 1;
  refused(a, kernel.max_k_name);
  a = good;
  a.k = 0;
  refused(a, "k = 0");
  a = good;
  a.k = 101;
  refused(a, "row_length");
  a = good;
  a.keys = nullptr;
  refused(a, "keys", false);
  a = good;
  a.rows = std::size_t{1} << 21;
  a.row_length = 1024;
  refused(a, "2^31");
  // Too little temp: a long row needs some.
  a = good;
  a.rows = 1;
  a.row_length = 1 << 20;
  std::size_t bytes = 0;
  ASSERT_TRUE(kernel.temp_bytes(a, &bytes).ok());
  ASSERT_GT(bytes, 0u);
  const kernels::Status s = kernel.select(a, &dummy, bytes - 1, d.stream);
  EXPECT_EQ(s.code(), kernels::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("temp"), std::string::npos) << s.message();
  // No rows: nothing to do.
  a = good;
  a.rows = 0;
  EXPECT_TRUE(kernel.temp_bytes(a, &bytes).ok());
  EXPECT_TRUE(kernel.select(a, nullptr, 0, d.stream).ok());
}

#undef TOP_K_TRACE

}  // namespace gpusort::testing
