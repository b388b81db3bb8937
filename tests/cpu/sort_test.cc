// CPU backend Sort against the oracles of tests/support/reference.h: every dtype x order x payload
// (keys only, values of widths 1 4 8 12 16, indices) x stable/unstable, on every input pattern at the
// edge sizes, plus a few million keys for some dtypes, several thread counts, unaligned buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "server/backend/cpu/cpu_backend.h"
#include "server/core/dtype.h"
#include "server/core/key_order.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort {
namespace {

using gpusort::testing::EdgeSizes;
using gpusort::testing::kAllPatterns;
using gpusort::testing::MakeInput;
using gpusort::testing::MakeValueBytes;
using gpusort::testing::Pattern;
using gpusort::testing::PatternName;
using gpusort::testing::ReferenceSort;
using gpusort::testing::ReferenceStableArgsort;
using gpusort::testing::SameBits;

struct SortCase {
  DType dtype;
  SortOrder order;
  SortPayload payload;
  std::size_t width;  // kValues only
  bool stable;
};

std::string CaseName(const SortCase& c) {
  std::string name(DTypeName(c.dtype));
  name += c.order == SortOrder::kAscending ? "_asc" : "_desc";
  if (c.payload == SortPayload::kNone) name += "_keys";
  if (c.payload == SortPayload::kIndices) name += "_indices";
  if (c.payload == SortPayload::kValues) name += "_values" + std::to_string(c.width);
  name += c.stable ? "_stable" : "_unstable";
  return name;
}

// What a backend produced for one sort.
template <typename T>
struct SortResult {
  std::vector<T> keys;
  std::vector<std::byte> values;
  std::vector<int64_t> indices;
};

// Runs the backend on copies of `in` (and `values`) placed `misalign` bytes past an aligned address.
template <typename T>
absl::Status RunSort(Backend& backend, const SortCase& c, const std::vector<T>& in,
                     const std::vector<std::byte>& values, std::size_t misalign,
                     SortResult<T>* result) {
  const std::size_t n = in.size();
  const std::size_t w = c.payload == SortPayload::kValues ? c.width : 0;
  std::vector<std::byte> key_store(n * sizeof(T) + misalign), value_store(n * w + misalign),
      out_store(n * w + misalign);
  std::byte* keys = key_store.data() + misalign;
  if (n) std::memcpy(keys, in.data(), n * sizeof(T));
  if (n * w != 0) std::memcpy(value_store.data() + misalign, values.data(), n * w);
  result->indices.assign(c.payload == SortPayload::kIndices ? n : 0, -1);

  SortSpec spec{.dtype = c.dtype, .order = c.order, .stable = c.stable, .payload = c.payload,
                .value_width = w, .algorithm = Algorithm::kAuto};
  SortBuffers buffers;
  buffers.count = n;
  buffers.keys = std::span<std::byte>(keys, n * sizeof(T));
  if (w) {
    buffers.values = std::span<const std::byte>(value_store.data() + misalign, n * w);
    buffers.values_out = std::span<std::byte>(out_store.data() + misalign, n * w);
  }
  buffers.indices_out = result->indices;
  Cancellation cancellation;
  ExecutionReport report;
  absl::Status status = RunSort(backend, spec, buffers, cancellation, report);
  if (!status.ok()) return status;
  if (report.algorithm != Algorithm::kCpu) return absl::InternalError("report.algorithm is not cpu");
  result->keys.resize(n);
  if (n) std::memcpy(result->keys.data(), keys, n * sizeof(T));
  result->values.assign(out_store.begin() + static_cast<std::ptrdiff_t>(misalign), out_store.end());
  return absl::OkStatus();
}

// The keys must be the oracle's bit for bit; the payload must be the stable permutation when asked
// for, else some permutation that is consistent with the keys.
template <typename T>
::testing::AssertionResult CheckSort(const SortCase& c, const std::vector<T>& in,
                                     const std::vector<std::byte>& values,
                                     const SortResult<T>& got) {
  const std::size_t n = in.size();
  const std::vector<T> want_keys = ReferenceSort(in, c.order);
  if (!SameBits(got.keys, want_keys)) {
    std::size_t i = 0;
    while (i < n && ToOrderedBits(got.keys[i]) == ToOrderedBits(want_keys[i])) ++i;
    return ::testing::AssertionFailure() << "keys differ from the reference at " << i << " of " << n;
  }
  if (c.payload == SortPayload::kNone) return ::testing::AssertionSuccess();
  const std::size_t w = c.width;
  if (c.stable) {
    const std::vector<int64_t> want = ReferenceStableArgsort(in, c.order);
    for (std::size_t i = 0; i < n; ++i) {
      if (c.payload == SortPayload::kIndices && got.indices[i] != want[i])
        return ::testing::AssertionFailure() << "index " << i << ": " << got.indices[i]
                                             << ", the stable order has " << want[i];
      if (c.payload == SortPayload::kValues &&
          std::memcmp(&got.values[i * w], &values[static_cast<std::size_t>(want[i]) * w], w) != 0)
        return ::testing::AssertionFailure() << "value " << i << " is not that of input "
                                             << want[i];
    }
    return ::testing::AssertionSuccess();
  }
  if (c.payload == SortPayload::kIndices) {
    std::vector<bool> used(n, false);
    for (std::size_t i = 0; i < n; ++i) {
      const int64_t p = got.indices[i];
      if (p < 0 || static_cast<std::size_t>(p) >= n || used[p])
        return ::testing::AssertionFailure() << "index " << i << " = " << p
                                             << " is out of range or used twice";
      used[p] = true;
      if (ToOrderedBits(in[p]) != ToOrderedBits(got.keys[i]))
        return ::testing::AssertionFailure() << "index " << i << " = " << p
                                             << " points at a different key";
    }
    return ::testing::AssertionSuccess();
  }
  // Unstable values: the (key, value) multiset must be unchanged. Both sides in (key bits, value
  // bytes) order must agree element by element.
  auto by_key_then_value = [&](const std::vector<T>& k, const std::byte* v) {
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const auto ka = ToOrderedBits(k[a]), kb = ToOrderedBits(k[b]);
      if (ka != kb) return ka < kb;
      return std::memcmp(v + a * w, v + b * w, w) < 0;
    });
    return order;
  };
  const std::vector<std::size_t> before = by_key_then_value(in, values.data());
  const std::vector<std::size_t> after = by_key_then_value(got.keys, got.values.data());
  for (std::size_t i = 0; i < n; ++i) {
    if (ToOrderedBits(in[before[i]]) != ToOrderedBits(got.keys[after[i]]) ||
        std::memcmp(&values[before[i] * w], &got.values[after[i] * w], w) != 0)
      return ::testing::AssertionFailure() << "the (key, value) pairs are not those of the input";
  }
  return ::testing::AssertionSuccess();
}

template <typename T>
void SortAndCheck(Backend& backend, const SortCase& c, const std::vector<T>& in,
                  std::size_t misalign, const std::string& what) {
  const std::size_t w = c.payload == SortPayload::kValues ? c.width : 0;
  const std::vector<std::byte> values = MakeValueBytes(in.size() * w, in.size());
  SortResult<T> got;
  const absl::Status status = RunSort(backend, c, in, values, misalign, &got);
  ASSERT_TRUE(status.ok()) << what << ": " << status;
  EXPECT_TRUE(CheckSort(c, in, values, got)) << what;
}

// Calls f(T{}) for every key type.
template <typename F>
void VisitDTypes(F&& f) {
  for (DType d : kAllDTypes) VisitDType(d, f);
}

class SortCases : public ::testing::TestWithParam<SortCase> {};

TEST_P(SortCases, MatchesReferenceOnAllPatternsAndEdgeSizes) {
  const SortCase c = GetParam();
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  VisitDType(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    int round = 0;
    for (Pattern p : kAllPatterns) {
      for (std::size_t n : EdgeSizes()) {
        const std::vector<T> in = MakeInput<T>(p, n, /*seed=*/n + 17);
        SortAndCheck(*backend, c, in, /*misalign=*/(round++) % 3 == 1 ? 1 : 0,
                     PatternName(p) + " n=" + std::to_string(n));
      }
    }
  });
}

std::vector<SortCase> AllSortCases() {
  std::vector<SortCase> cases;
  for (DType d : kAllDTypes)
    for (SortOrder o : {SortOrder::kAscending, SortOrder::kDescending})
      for (bool stable : {true, false}) {
        cases.push_back({d, o, SortPayload::kNone, 0, stable});
        cases.push_back({d, o, SortPayload::kIndices, 0, stable});
        for (std::size_t w : {1, 4, 8, 12, 16}) cases.push_back({d, o, SortPayload::kValues, w, stable});
      }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cpu, SortCases, ::testing::ValuesIn(AllSortCases()),
                         [](const ::testing::TestParamInfo<SortCase>& info) {
                           return CaseName(info.param);
                         });

// Millions of keys: the parallel radix passes with many chunks.
TEST(SortLarge, MillionsOfKeys) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  SortAndCheck(*backend, {DType::kUInt32, SortOrder::kAscending, SortPayload::kIndices, 0, true},
               MakeInput<uint32_t>(Pattern::kRandom, 3'000'000, 1), 0, "u32 3M indices");
  SortAndCheck(*backend, {DType::kFloat64, SortOrder::kDescending, SortPayload::kValues, 12, true},
               MakeInput<double>(Pattern::kSpecials, 2'000'000, 2), 0, "f64 2M specials values12");
  SortAndCheck(*backend, {DType::kInt64, SortOrder::kDescending, SortPayload::kNone, 0, false},
               MakeInput<int64_t>(Pattern::kRandom, 3'000'000, 3), 0, "i64 3M keys");
  SortAndCheck(*backend, {DType::kFloat32, SortOrder::kAscending, SortPayload::kValues, 4, true},
               MakeInput<float>(Pattern::kRandom, 2'000'000, 4), 1, "f32 2M values4 unaligned");
  SortAndCheck(*backend, {DType::kUInt64, SortOrder::kDescending, SortPayload::kIndices, 0, true},
               MakeInput<uint64_t>(Pattern::kFewDistinct, 2'000'000, 5), 0, "u64 2M few distinct");
}

// Keys that differ only in some bytes: most radix passes are skipped, in odd and even numbers (the
// result then lands in the scratch buffer and is copied back).
TEST(SortLarge, SkippedDigits) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  std::mt19937_64 rng(11);
  for (int varying_bytes : {1, 2, 3}) {
    for (std::size_t n : {std::size_t{300}, std::size_t{5000}, std::size_t{200'000}, std::size_t{300'000}}) {
      std::vector<uint64_t> in(n);
      const uint64_t base = 0x0123456789abcdefULL;
      for (auto& x : in) {
        x = base;
        for (int b = 0; b < varying_bytes; ++b) x ^= (rng() & 0xffULL) << (8 * (2 * b + 1));
      }
      const std::string what = std::to_string(varying_bytes) + " bytes n=" + std::to_string(n);
      for (SortPayload payload : {SortPayload::kNone, SortPayload::kIndices}) {
        SortAndCheck(*backend, {DType::kUInt64, SortOrder::kAscending, payload, 0, true}, in, 0, what);
        SortAndCheck(*backend, {DType::kUInt64, SortOrder::kDescending, payload, 0, true}, in, 1, what);
        SortAndCheck(*backend, {DType::kUInt64, SortOrder::kDescending, payload, 0, true}, in, 0, what);
      }
      SortAndCheck(*backend, {DType::kUInt64, SortOrder::kAscending, SortPayload::kValues, 3, true},
                   in, 0, what);
    }
  }
}

// From 256K keys on (with more than one thread) the sort splits by its top varying digit first and
// sorts the buckets apart: every dtype and pattern, orders and payloads in turn.
TEST(SortLarge, TopDigitSplitOnEveryDtypeAndPattern) {
  std::unique_ptr<Backend> backend = MakeCpuBackend({.threads = 2});
  VisitDTypes([&](auto tag) {
    using T = decltype(tag);
    int round = 0;
    for (Pattern p : kAllPatterns) {
      const SortOrder order = round % 2 == 0 ? SortOrder::kAscending : SortOrder::kDescending;
      const SortCase payloads[] = {
          {DTypeOf<T>::value, order, SortPayload::kIndices, 0, true},
          {DTypeOf<T>::value, order, SortPayload::kValues, 12, true},
          {DTypeOf<T>::value, order, SortPayload::kNone, 0, false},
          {DTypeOf<T>::value, order, SortPayload::kValues, 8, true},
          {DTypeOf<T>::value, order, SortPayload::kValues, 1, false}};
      const SortCase& c = payloads[round % 5];
      SortAndCheck(*backend, c, MakeInput<T>(p, 270'000, round), round % 3 == 2 ? 1 : 0,
                   CaseName(c) + " " + PatternName(p));
      ++round;
    }
  });
}

// Skewed keys: most share the top byte, so one bucket of the split holds most of the array and is
// itself sorted in parallel.
TEST(SortLarge, SkewedTopDigit) {
  for (int threads : {2, 3}) {
    std::unique_ptr<Backend> backend = MakeCpuBackend({.threads = threads});
    std::mt19937_64 rng(5);
    std::vector<uint32_t> in(600'000);
    for (auto& x : in) x = (rng() % 10 == 0) ? static_cast<uint32_t>(rng()) : static_cast<uint32_t>(rng() & 0x00ffffff);
    for (SortOrder o : {SortOrder::kAscending, SortOrder::kDescending}) {
      SortAndCheck(*backend, {DType::kUInt32, o, SortPayload::kIndices, 0, true}, in, 0, "skewed");
      SortAndCheck(*backend, {DType::kUInt32, o, SortPayload::kValues, 4, true}, in, 1, "skewed");
      SortAndCheck(*backend, {DType::kUInt32, o, SortPayload::kNone, 0, true}, in, 0, "skewed");
    }
  }
}

// The chunking must not depend on the thread count being the machine's.
TEST(SortThreads, AnyThreadCount) {
  for (int threads : {1, 3, 8}) {
    std::unique_ptr<Backend> backend = MakeCpuBackend({.threads = threads});
    EXPECT_EQ(backend->device(),
              "cpu (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)"));
    const std::string what = "threads=" + std::to_string(threads);
    for (SortOrder o : {SortOrder::kAscending, SortOrder::kDescending}) {
      SortAndCheck(*backend, {DType::kUInt32, o, SortPayload::kIndices, 0, true},
                   MakeInput<uint32_t>(Pattern::kRandom, 400'000, 9), 0, what);
      SortAndCheck(*backend, {DType::kFloat64, o, SortPayload::kValues, 16, true},
                   MakeInput<double>(Pattern::kSpecials, 300'001, 10), 1, what);
      SortAndCheck(*backend, {DType::kInt32, o, SortPayload::kValues, 2, true},
                   MakeInput<int32_t>(Pattern::kFewDistinct, 250'000, 12), 0, what);
    }
  }
}

// Every value width 1..256 moves whole with its key (odd widths go through the gather).
TEST(SortValues, EveryWidth) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  for (std::size_t w = 1; w <= 256; w += (w < 20 ? 1 : 13)) {
    SortAndCheck(*backend, {DType::kInt32, SortOrder::kDescending, SortPayload::kValues, w, true},
                 MakeInput<int32_t>(Pattern::kFewDistinct, 3000, w), w % 2, "w=" + std::to_string(w));
  }
  SortAndCheck(*backend, {DType::kUInt32, SortOrder::kAscending, SortPayload::kValues, 256, true},
               MakeInput<uint32_t>(Pattern::kRandom, 100'000, 3), 0, "w=256 n=100000");
}

// The checker itself must reject wrong answers (else every test above would pass vacuously).
TEST(SortChecker, RejectsWrongAnswers) {
  const std::vector<float> in = {2.0f, -0.0f, 0.0f, 2.0f, 1.0f};
  const SortCase keys{DType::kFloat32, SortOrder::kAscending, SortPayload::kNone, 0, false};
  SortResult<float> got;
  got.keys = {-0.0f, 0.0f, 1.0f, 2.0f, 2.0f};
  EXPECT_TRUE(CheckSort(keys, in, {}, got));
  got.keys = {0.0f, -0.0f, 1.0f, 2.0f, 2.0f};  // +-0 swapped
  EXPECT_FALSE(CheckSort(keys, in, {}, got));

  const SortCase stable{DType::kFloat32, SortOrder::kAscending, SortPayload::kIndices, 0, true};
  got.keys = {-0.0f, 0.0f, 1.0f, 2.0f, 2.0f};
  got.indices = {1, 2, 4, 0, 3};
  EXPECT_TRUE(CheckSort(stable, in, {}, got));
  got.indices = {1, 2, 4, 3, 0};  // equal keys out of input order
  EXPECT_FALSE(CheckSort(stable, in, {}, got));
  SortCase unstable = stable;
  unstable.stable = false;
  EXPECT_TRUE(CheckSort(unstable, in, {}, got));
  got.indices = {1, 2, 4, 3, 3};  // an index twice
  EXPECT_FALSE(CheckSort(unstable, in, {}, got));
  got.indices = {2, 1, 4, 3, 0};  // points at +0.0 for -0.0
  EXPECT_FALSE(CheckSort(unstable, in, {}, got));

  const SortCase values{DType::kFloat32, SortOrder::kAscending, SortPayload::kValues, 1, false};
  const std::vector<std::byte> v = {std::byte{10}, std::byte{11}, std::byte{12}, std::byte{13},
                                    std::byte{14}};
  got.values = {std::byte{11}, std::byte{12}, std::byte{14}, std::byte{13}, std::byte{10}};
  EXPECT_TRUE(CheckSort(values, in, v, got));
  got.values = {std::byte{12}, std::byte{11}, std::byte{14}, std::byte{13}, std::byte{10}};
  EXPECT_FALSE(CheckSort(values, in, v, got));
}

}  // namespace
}  // namespace gpusort
