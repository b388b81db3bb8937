// CPU backend TopK against ReferenceTopK: every dtype x largest/smallest x sorted/unsorted x output,
// over row shapes that reach every selection path (k = 1, small k by filtering, most of the row by
// nth_element or radix, one long row split over the threads, 100000 rows of 8, rows of one) and every
// input pattern (all equal, few distinct, NaN/inf specials, ...).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "server/backend/cpu/cpu_backend.h"
#include "server/core/dtype.h"
#include "server/core/key_order.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort {
namespace {

using gpusort::testing::kAllPatterns;
using gpusort::testing::MakeInput;
using gpusort::testing::Pattern;
using gpusort::testing::PatternName;
using gpusort::testing::ReferenceTopK;
using gpusort::testing::TopKAnswer;

struct TopKCase {
  DType dtype;
  bool largest;
  bool sorted;
  TopKOutput output;
};

std::string CaseName(const TopKCase& c) {
  std::string name(DTypeName(c.dtype));
  name += c.largest ? "_largest" : "_smallest";
  name += c.sorted ? "_sorted" : "_unsorted";
  if (c.output == TopKOutput::kValuesAndIndices) name += "_both";
  if (c.output == TopKOutput::kValues) name += "_values";
  if (c.output == TopKOutput::kIndices) name += "_indices";
  return name;
}

struct Shape {
  std::size_t rows, m, k;
};

std::string ShapeName(const Shape& s) {
  return std::to_string(s.rows) + "x" + std::to_string(s.m) + " k=" + std::to_string(s.k);
}

template <typename T>
struct TopKResult {
  std::vector<T> values;
  std::vector<int64_t> indices;
};

template <typename T>
absl::Status RunTopK(Backend& backend, const TopKCase& c, const Shape& s, const std::vector<T>& in,
                     std::size_t misalign, TopKResult<T>* result) {
  TopKSpec spec{.dtype = c.dtype, .k = s.k, .largest = c.largest, .sorted = c.sorted,
                .output = c.output, .rows = s.rows, .algorithm = Algorithm::kAuto};
  const std::size_t results = s.rows * s.k;
  std::vector<std::byte> key_store(in.size() * sizeof(T) + misalign);
  std::byte* keys = key_store.data() + misalign;
  if (!in.empty()) std::memcpy(keys, in.data(), in.size() * sizeof(T));
  std::vector<std::byte> value_store(spec.wants_values() ? results * sizeof(T) + misalign : 0);
  result->indices.assign(spec.wants_indices() ? results : 0, -1);
  TopKBuffers buffers;
  buffers.count = in.size();
  buffers.keys = std::span<const std::byte>(keys, in.size() * sizeof(T));
  if (spec.wants_values()) buffers.values_out = std::span<std::byte>(value_store.data() + misalign, results * sizeof(T));
  buffers.indices_out = result->indices;
  Cancellation cancellation;
  ExecutionReport report;
  absl::Status status = RunTopK(backend, spec, buffers, cancellation, report);
  if (!status.ok()) return status;
  if (report.algorithm != Algorithm::kCpu) return absl::InternalError("report.algorithm is not cpu");
  if (spec.wants_values()) {
    result->values.resize(results);
    std::memcpy(result->values.data(), value_store.data() + misalign, results * sizeof(T));
  }
  return absl::OkStatus();
}

// sorted: values and indices exactly the reference's. Unsorted: per row, the same set of positions
// (and the same multiset of key bits), and each value the key at its index.
template <typename T>
::testing::AssertionResult CheckTopK(const TopKCase& c, const Shape& s, const std::vector<T>& in,
                                     const TopKAnswer<T>& want, const TopKResult<T>& got) {
  const bool values = c.output != TopKOutput::kIndices, indices = c.output != TopKOutput::kValues;
  for (std::size_t r = 0; r < s.rows; ++r) {
    const std::size_t first = r * s.k;
    std::vector<int64_t> want_idx(want.indices.begin() + first, want.indices.begin() + first + s.k);
    std::vector<OrderedBitsType<T>> want_bits(s.k);
    for (std::size_t j = 0; j < s.k; ++j) want_bits[j] = ToOrderedBits(want.values[first + j]);
    std::vector<int64_t> got_idx;
    std::vector<OrderedBitsType<T>> got_bits;
    if (indices) got_idx.assign(got.indices.begin() + first, got.indices.begin() + first + s.k);
    if (values)
      for (std::size_t j = 0; j < s.k; ++j) got_bits.push_back(ToOrderedBits(got.values[first + j]));
    if (values && indices) {
      for (std::size_t j = 0; j < s.k; ++j) {
        const int64_t p = got_idx[j];
        if (p < 0 || static_cast<std::size_t>(p) >= s.m ||
            ToOrderedBits(in[r * s.m + p]) != got_bits[j])
          return ::testing::AssertionFailure() << "row " << r << " result " << j
                                               << ": the value is not the key at index " << p;
      }
    }
    if (!c.sorted) {
      std::sort(want_idx.begin(), want_idx.end());
      std::sort(want_bits.begin(), want_bits.end());
      std::sort(got_idx.begin(), got_idx.end());
      std::sort(got_bits.begin(), got_bits.end());
    }
    if (indices && got_idx != want_idx)
      return ::testing::AssertionFailure() << "row " << r << ": indices differ from the reference"
                                           << (c.sorted ? "" : " (as a set)");
    if (values && got_bits != want_bits)
      return ::testing::AssertionFailure() << "row " << r << ": values differ from the reference"
                                           << (c.sorted ? "" : " (as a multiset)");
  }
  return ::testing::AssertionSuccess();
}

template <typename T>
::testing::AssertionResult CheckTopK(const TopKCase& c, const Shape& s, const std::vector<T>& in,
                                     const TopKResult<T>& got) {
  return CheckTopK(c, s, in, ReferenceTopK(in, s.rows, s.k, c.largest), got);
}

template <typename T>
void TopKAndCheck(Backend& backend, const TopKCase& c, const Shape& s, const std::vector<T>& in,
                  const TopKAnswer<T>& want, std::size_t misalign, const std::string& what) {
  TopKResult<T> got;
  const absl::Status status = RunTopK(backend, c, s, in, misalign, &got);
  ASSERT_TRUE(status.ok()) << what << ": " << status;
  EXPECT_TRUE(CheckTopK(c, s, in, want, got)) << what;
}

template <typename T>
void TopKAndCheck(Backend& backend, const TopKCase& c, const Shape& s, const std::vector<T>& in,
                  std::size_t misalign, const std::string& what) {
  TopKAndCheck(backend, c, s, in, ReferenceTopK(in, s.rows, s.k, c.largest), misalign, what);
}

// Shapes that reach each path of topk.cc / topk_select.h.
std::vector<Shape> Shapes() {
  return {
      {1, 1, 1},          {1, 2, 2},          {1, 1000, 1},         {1, 1000, 1000},
      {1, 1000, 999},     {1, 1000, 500},     {1, 1000, 10},        {1, 1000, 125},
      {1, 5000, 4999},    {1, 5000, 2500},    {1, 120'000, 1},      {1, 120'000, 7},
      {1, 120'000, 15'000}, {1, 120'000, 90'000}, {1, 70'000, 70'000}, {3, 70'000, 50},
      {2, 70'000, 40'000}, {100'000, 8, 1},   {100'000, 8, 3},      {100'000, 8, 8},
      {1000, 1, 1},       {32, 5000, 4999},   {32, 5000, 100},      {7, 333, 333},
  };
}

// One dtype and direction; every sorted x output variant is checked against one reference answer.
struct TopKFamily {
  DType dtype;
  bool largest;
};

class TopKCases : public ::testing::TestWithParam<TopKFamily> {};

TEST_P(TopKCases, MatchesReferenceForEverySortedAndOutput) {
  const TopKFamily f = GetParam();
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  VisitDType(f.dtype, [&](auto tag) {
    using T = decltype(tag);
    int round = 0;
    for (const Shape& s : Shapes()) {
      for (Pattern p : kAllPatterns) {
        // Big rows on a few patterns only, to keep the suite quick.
        if (s.rows * s.m > 100'000 && p != Pattern::kSpecials && p != Pattern::kFewDistinct)
          continue;
        const std::vector<T> in = MakeInput<T>(p, s.rows * s.m, s.m * 31 + s.k);
        const TopKAnswer<T> want = ReferenceTopK(in, s.rows, s.k, f.largest);
        for (bool sorted : {true, false}) {
          for (TopKOutput o :
               {TopKOutput::kValuesAndIndices, TopKOutput::kValues, TopKOutput::kIndices}) {
            const TopKCase c{f.dtype, f.largest, sorted, o};
            TopKAndCheck(*backend, c, s, in, want, (round++) % 3 == 2 ? 1 : 0,
                         CaseName(c) + " " + ShapeName(s) + " " + PatternName(p));
          }
        }
      }
    }
  });
}

std::vector<TopKFamily> AllTopKFamilies() {
  std::vector<TopKFamily> families;
  for (DType d : kAllDTypes)
    for (bool largest : {true, false}) families.push_back({d, largest});
  return families;
}

INSTANTIATE_TEST_SUITE_P(Cpu, TopKCases, ::testing::ValuesIn(AllTopKFamilies()),
                         [](const ::testing::TestParamInfo<TopKFamily>& info) {
                           return std::string(DTypeName(info.param.dtype)) +
                                  (info.param.largest ? "_largest" : "_smallest");
                         });

// Ties: every key equal means the first k positions, in order, whatever the path.
TEST(TopKTies, AllEqualTakesTheFirstPositions) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  for (const Shape& s : {Shape{1, 300'000, 5}, Shape{1, 300'000, 200'000}, Shape{1, 50, 49},
                         Shape{4000, 16, 4}, Shape{1, 10'000, 9000}}) {
    std::vector<float> in(s.rows * s.m, -0.0f);
    TopKResult<float> got;
    const TopKCase c{DType::kFloat32, true, true, TopKOutput::kValuesAndIndices};
    ASSERT_TRUE(RunTopK(*backend, c, s, in, 0, &got).ok());
    for (std::size_t r = 0; r < s.rows; ++r)
      for (std::size_t j = 0; j < s.k; ++j) {
        ASSERT_EQ(got.indices[r * s.k + j], static_cast<int64_t>(j)) << ShapeName(s);
        ASSERT_TRUE(std::signbit(got.values[r * s.k + j])) << ShapeName(s);
      }
  }
}

// Positive NaN is the largest float, -NaN the smallest, -0.0 below +0.0.
TEST(TopKSpecials, TotalOrderAtTheEnds) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> in = {0.0f, -nan, inf, -0.0f, nan, -inf, 1.0f};
  TopKResult<float> got;
  ASSERT_TRUE(RunTopK(*backend, {DType::kFloat32, true, true, TopKOutput::kIndices}, {1, 7, 7}, in, 0, &got).ok());
  EXPECT_EQ(got.indices, (std::vector<int64_t>{4, 2, 6, 0, 3, 5, 1}));
  ASSERT_TRUE(RunTopK(*backend, {DType::kFloat32, false, true, TopKOutput::kIndices}, {1, 7, 3}, in, 0, &got).ok());
  EXPECT_EQ(got.indices, (std::vector<int64_t>{1, 5, 3}));
}

// Different thread counts split rows and chunks differently; the answer must not change.
TEST(TopKThreads, AnyThreadCount) {
  for (int threads : {1, 3, 8}) {
    std::unique_ptr<Backend> backend = MakeCpuBackend({.threads = threads});
    const std::string what = "threads=" + std::to_string(threads);
    for (const Shape& s : {Shape{1, 400'000, 33}, Shape{1, 400'000, 300'000}, Shape{5, 100'000, 1000},
                           Shape{50'000, 8, 2}}) {
      for (bool sorted : {true, false}) {
        const TopKCase c{DType::kFloat64, true, sorted, TopKOutput::kValuesAndIndices};
        TopKAndCheck(*backend, c, s, MakeInput<double>(Pattern::kSpecials, s.rows * s.m, 5), 0,
                     what + " " + ShapeName(s));
        const TopKCase i{DType::kInt32, false, sorted, TopKOutput::kIndices};
        TopKAndCheck(*backend, i, s, MakeInput<int32_t>(Pattern::kFewDistinct, s.rows * s.m, 6), 1,
                     what + " " + ShapeName(s));
      }
    }
  }
}

TEST(TopKChecker, RejectsWrongAnswers) {
  const std::vector<int32_t> in = {5, 9, 9, 1};
  const Shape s{1, 4, 2};
  TopKResult<int32_t> got;
  got.values = {9, 9};
  got.indices = {1, 2};
  EXPECT_TRUE(CheckTopK<int32_t>({DType::kInt32, true, true, TopKOutput::kValuesAndIndices}, s, in, got));
  got.indices = {2, 1};  // tie broken toward the later index first
  EXPECT_FALSE(CheckTopK<int32_t>({DType::kInt32, true, true, TopKOutput::kIndices}, s, in, got));
  EXPECT_TRUE(CheckTopK<int32_t>({DType::kInt32, true, false, TopKOutput::kIndices}, s, in, got));
  got.indices = {1, 0};
  EXPECT_FALSE(CheckTopK<int32_t>({DType::kInt32, true, false, TopKOutput::kIndices}, s, in, got));
  got.values = {9, 5};
  EXPECT_FALSE(CheckTopK<int32_t>({DType::kInt32, true, false, TopKOutput::kValues}, s, in, got));
}

}  // namespace
}  // namespace gpusort
