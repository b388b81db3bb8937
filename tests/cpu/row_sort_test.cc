// Sort with rows (SortSpec::rows) on the CPU backend: each row must come back exactly as the row sorted
// alone by the oracles (std::stable_sort in the key order), its indices counting from the row's start
// and its values moved within the row; on every dtype, both orders, every payload, with rows fewer than
// the threads (one row after another, all threads each) and more (whole rows per thread).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "server/backend/cpu/cpu_backend.h"
#include "server/core/dtype.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort {
namespace {

using testing::kAllPatterns;
using testing::MakeInput;
using testing::MakeValueBytes;
using testing::Pattern;
using testing::PatternName;

struct Shape {
  std::size_t rows, length;
};

template <typename T>
void ExpectRowsSorted(Backend& backend, const SortSpec& spec, const std::vector<T>& keys, const std::string& what) {
  const std::size_t n = keys.size(), w = spec.value_width;
  std::vector<T> got_keys = keys;
  const std::vector<std::byte> values = MakeValueBytes(spec.payload == SortPayload::kValues ? n * w : 0, n);
  std::vector<std::byte> got_values(values.size(), std::byte{0xAB});
  std::vector<int64_t> got_indices(spec.payload == SortPayload::kIndices ? n : 0, -7);
  SortBuffers buffers{.count = n,
                      .keys = std::as_writable_bytes(std::span(got_keys)),
                      .values = values,
                      .values_out = got_values,
                      .indices_out = got_indices};
  Cancellation cancellation;
  ExecutionReport report;
  const absl::Status status = RunSort(backend, spec, buffers, cancellation, report);
  ASSERT_TRUE(status.ok()) << what << ": " << status;
  for (std::size_t r = 0; r < spec.segment_count(); ++r) {
    const std::size_t begin = spec.SegmentBegin(r, n), m = spec.SegmentBegin(r + 1, n) - begin;
    const std::vector<T> row(keys.begin() + begin, keys.begin() + begin + m);
    const std::vector<int64_t> order = testing::ReferenceStableArgsort(row, spec.order);
    for (std::size_t j = 0; j < m; ++j) {
      const std::size_t at = begin + j, from = begin + order[j];
      ASSERT_EQ(ToOrderedBits(got_keys[at]), ToOrderedBits(keys[from])) << what << " row " << r << " key " << j;
      if (spec.payload == SortPayload::kIndices) ASSERT_EQ(got_indices[at], order[j]) << what << " row " << r;
      if (spec.payload == SortPayload::kValues) {
        ASSERT_EQ(std::memcmp(got_values.data() + at * w, values.data() + from * w, w), 0) << what << " row " << r;
      }
    }
  }
}

template <typename T>
class CpuRowSort : public ::testing::Test {};
using KeyTypes = ::testing::Types<uint32_t, float, double, int64_t, Float16, BFloat16, int16_t, uint8_t>;
TYPED_TEST_SUITE(CpuRowSort, KeyTypes);

TYPED_TEST(CpuRowSort, EachRowIsSortedAloneWithItsIndicesAndValues) {
  using T = TypeParam;
  for (int threads : {1, 4}) {
    std::unique_ptr<Backend> backend = MakeCpuBackend({.threads = threads});
    for (Shape shape : {Shape{2, 0}, Shape{7, 1}, Shape{3, 257}, Shape{1000, 8}, Shape{5, 4097}, Shape{2, 70001}}) {
      for (Pattern pattern : kAllPatterns) {
        const auto keys = MakeInput<T>(pattern, shape.rows * shape.length, shape.length + 3);
        for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
          for (auto [payload, width] : {std::pair{SortPayload::kNone, 0}, std::pair{SortPayload::kIndices, 0},
                                        std::pair{SortPayload::kValues, 4}, std::pair{SortPayload::kValues, 12}}) {
            const SortSpec spec{.dtype = DTypeOf<T>::value,
                                .order = order,
                                .stable = true,
                                .payload = payload,
                                .value_width = static_cast<std::size_t>(width),
                                .rows = shape.rows};
            ExpectRowsSorted(*backend, spec, keys,
                             PatternName(pattern) + " rows=" + std::to_string(shape.rows) + " length=" +
                                 std::to_string(shape.length) + " threads=" + std::to_string(threads) +
                                 (order == SortOrder::kAscending ? " asc" : " desc") + " payload=" +
                                 std::to_string(static_cast<int>(payload)) + " width=" + std::to_string(width));
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// Segments by offsets: empty ones, one-key ones, long ones (past a 4096-key tile and the small sort),
// many short ones (whole segments per thread) and few long ones (one after another).
TYPED_TEST(CpuRowSort, EachSegmentIsSortedAloneWithItsIndicesAndValues) {
  using T = TypeParam;
  const std::vector<std::vector<std::size_t>> lengths = {{0, 1, 0, 7, 300, 1}, {5000, 0, 70001}, {1, 2, 3, 0, 513}};
  for (int threads : {1, 4}) {
    std::unique_ptr<Backend> backend = MakeCpuBackend({.threads = threads});
    for (std::size_t n : {std::size_t{1}, std::size_t{999}, std::size_t{100003}}) {
      for (const auto& pattern_lengths : lengths) {
        const auto offsets = std::make_shared<const std::vector<uint64_t>>(testing::SegmentOffsetsOf(n, pattern_lengths));
        for (Pattern pattern : {Pattern::kSpecials, Pattern::kFewDistinct, Pattern::kReversed}) {
          const auto keys = MakeInput<T>(pattern, n, n + offsets->size());
          for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
            for (auto [payload, width] : {std::pair{SortPayload::kIndices, 0}, std::pair{SortPayload::kValues, 5}}) {
              SortSpec spec{.dtype = DTypeOf<T>::value,
                            .order = order,
                            .stable = true,
                            .payload = payload,
                            .value_width = static_cast<std::size_t>(width)};
              spec.segment_offsets = offsets;
              ExpectRowsSorted(*backend, spec, keys,
                               PatternName(pattern) + " n=" + std::to_string(n) + " segments=" +
                                   std::to_string(offsets->size() - 1) + " threads=" + std::to_string(threads));
              if (::testing::Test::HasFatalFailure()) return;
            }
          }
        }
      }
    }
  }
}

TEST(CpuRowSort, OneRowIsTheWholeArray) {
  std::unique_ptr<Backend> backend = MakeCpuBackend({.threads = 2});
  const auto keys = MakeInput<int32_t>(Pattern::kFewDistinct, 5000, 9);
  ExpectRowsSorted(*backend, SortSpec{.dtype = DType::kInt32, .stable = true, .payload = SortPayload::kIndices},
                   keys, "rows=1");
}

// TopK of segments: each yields min(k, its length) results in rank order (ties by smaller index), one
// segment after another, indices from its start; k below, between and above the segments' lengths, on
// one thread and four (long segments over every thread, short ones whole per thread).
TYPED_TEST(CpuRowSort, TopKOfSegmentsTakesMinOfKAndEachLength) {
  using T = TypeParam;
  const std::vector<std::vector<std::size_t>> lengths = {{0, 1, 0, 7, 300, 1}, {5000, 0, 70001}};
  for (int threads : {1, 4}) {
    std::unique_ptr<Backend> backend = MakeCpuBackend({.threads = threads});
    for (std::size_t n : {std::size_t{1}, std::size_t{100003}}) {
      for (const auto& pattern_lengths : lengths) {
        const std::vector<uint64_t> offsets = testing::SegmentOffsetsOf(n, pattern_lengths);
        const auto keys = MakeInput<T>(Pattern::kSpecials, n, n + offsets.size());
        for (std::size_t k : {std::size_t{1}, std::size_t{5}, std::size_t{4000}, std::size_t{200000}}) {
          for (bool largest : {true, false}) {
            TopKSpec spec{.dtype = DTypeOf<T>::value, .k = k, .largest = largest, .sorted = true};
            spec.SetSegments(std::make_shared<const std::vector<uint64_t>>(offsets));
            const auto expected = testing::ReferenceSegmentTopK(keys, offsets, k, largest);
            std::vector<T> values(spec.results());
            std::vector<int64_t> indices(spec.results(), -3);
            TopKBuffers buffers{.count = n,
                                .keys = std::as_bytes(std::span(keys)),
                                .values_out = std::as_writable_bytes(std::span(values)),
                                .indices_out = indices};
            Cancellation cancellation;
            ExecutionReport report;
            const std::string what = "n=" + std::to_string(n) + " segments=" + std::to_string(offsets.size() - 1) +
                                     " k=" + std::to_string(k) + (largest ? " largest" : " smallest") +
                                     " threads=" + std::to_string(threads);
            ASSERT_TRUE(RunTopK(*backend, spec, buffers, cancellation, report).ok()) << what;
            ASSERT_EQ(indices, expected.indices) << what;
            ASSERT_TRUE(testing::SameBits(values, expected.values)) << what;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace gpusort
