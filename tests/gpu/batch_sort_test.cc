// The CUDA backend's SortBatch (batch_sort.h) against the CPU backend, request by request: the row form
// (segmented bitonic, one row per request padded to the longest), the composite radix form and the
// one-at-a-time fallback, for every dtype, both orders, keys alone and with indices. Requests hold the
// keys that collide with the row form's padding (the largest key ascending, the smallest descending:
// both become all-ones bits), every pattern, and lengths from 1 to past one bitonic tile. Each request
// must get exactly its own answer, and the report must name the form that ran. Skips when no GPU.
#include <gtest/gtest.h>

#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "server/backend/cuda/batch_sort.h"
#include "server/core/dtype.h"
#include "tests/gpu/backends.h"
#include "tests/support/inputs.h"

namespace gpusort {
namespace {

using gpusort::testing::Bytes;
using gpusort::testing::Cpu;
using gpusort::testing::Cuda;
using gpusort::testing::kAllPatterns;
using gpusort::testing::MakeInput;
using gpusort::testing::Pattern;

// One request of a batch, with the buffers the backend writes into.
struct Request {
  std::vector<std::byte> input, keys;
  std::vector<int64_t> indices;
  ExecutionReport report;
};

template <typename T>
std::vector<Request> MakeRequests(const std::vector<std::size_t>& lengths, SortOrder order, std::uint64_t seed) {
  std::vector<Request> requests(lengths.size());
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    const Pattern pattern = kAllPatterns[(seed + i) % std::size(kAllPatterns)];
    std::vector<T> keys = MakeInput<T>(pattern, lengths[i], seed * 131 + i);
    // Every third request is full of the key whose ordered bits are all ones in this order: the row
    // form's padding value. Such keys must still come back with their own positions, before no padding.
    const T all_ones = order == SortOrder::kAscending ? std::numeric_limits<T>::max()
                                                      : std::numeric_limits<T>::lowest();
    if (i % 3 == 1) {
      for (std::size_t j = 0; j < keys.size(); j += 2) keys[j] = all_ones;
    }
    requests[i].input = Bytes(keys);
  }
  return requests;
}

// Runs `requests` as one batch on the CUDA backend and one at a time on the CPU backend; expects the
// same keys and indices for each, and `form` (when given) in each GPU report.
void ExpectBatchMatchesCpu(const SortSpec& spec, std::vector<Request>& requests, std::optional<Algorithm> form,
                           const std::string& what) {
  std::vector<BatchItem> items(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    Request& r = requests[i];
    r.keys = r.input;
    items[i].buffers.count = r.input.size() / ElementSize(spec.dtype);
    items[i].buffers.keys = r.keys;
    if (spec.payload == SortPayload::kIndices) {
      r.indices.assign(items[i].buffers.count, -7);
      items[i].buffers.indices_out = r.indices;
    }
    items[i].report = &r.report;
  }
  Cancellation cancellation;
  ASSERT_TRUE(Cuda()->SortBatch(spec, items, cancellation).ok()) << what;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    Request& r = requests[i];
    std::vector<std::byte> want_keys = r.input;
    std::vector<int64_t> want_indices(spec.payload == SortPayload::kIndices ? items[i].buffers.count : 0);
    SortBuffers buffers;
    buffers.count = items[i].buffers.count;
    buffers.keys = want_keys;
    buffers.indices_out = want_indices;
    SortSpec reference = spec;
    reference.algorithm = Algorithm::kAuto;
    ExecutionReport cpu_report;
    ASSERT_TRUE(Cpu()->Sort(reference, buffers, cancellation, cpu_report).ok()) << what;
    const std::string request = what + " request " + std::to_string(i) + " of " + std::to_string(buffers.count);
    ASSERT_TRUE(r.keys == want_keys) << request << ": keys differ";
    ASSERT_EQ(r.indices, want_indices) << request;
    if (form) {
      EXPECT_EQ(r.report.algorithm, *form) << request;
    }
  }
}

template <typename T>
class BatchSort : public ::testing::Test {};
using AllKeyTypes = ::testing::Types<int32_t, uint32_t, int64_t, uint64_t, float, double, Float16, BFloat16, int16_t,
                                     uint16_t, int8_t, uint8_t>;
TYPED_TEST_SUITE(BatchSort, AllKeyTypes);

// Batch shapes. AUTO takes a batch to the GPU from 16384 keys in all (auto_policy.h), so each holds
// more; `rows` says whether the row form fits (longest request within a tile, padding within 4x).
struct Shape {
  std::string name;
  std::vector<std::size_t> lengths;
  bool rows;
};

std::vector<Shape> Shapes() {
  std::vector<std::size_t> mixed = {1, 2, 33};  // then 61 requests of 257..512 keys
  for (std::size_t i = 0; i < 61; ++i) mixed.push_back(257 + (i * 37) % 256);
  std::vector<std::size_t> one_long = {4096};  // and 63 of 200: padded 16x
  one_long.resize(64, 200);
  return {
      {"short rows of mixed length", mixed, true},
      {"tile-sized rows", {4096, 4095, 2049, 4000, 3333, 1025}, true},
      {"longer than a tile", {4097, 5000, 4500, 6000}, false},
      {"one long among many short", one_long, false},
      {"one key each", std::vector<std::size_t>(20000, 1), false},  // nothing to sort in a row of one
  };
}

TYPED_TEST(BatchSort, AutoPicksTheFormThatFitsAndEveryCallerGetsItsOwnAnswer) {
  SKIP_WITHOUT_GPU();
  using T = TypeParam;
  std::uint64_t seed = 1;
  for (const Shape& shape : Shapes()) {
    for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
      for (SortPayload payload : {SortPayload::kNone, SortPayload::kIndices}) {
        SortSpec spec;
        spec.dtype = DTypeOf<T>::value;
        spec.order = order;
        spec.stable = true;
        spec.payload = payload;
        spec.algorithm = Algorithm::kAuto;
        std::vector<Request> requests = MakeRequests<T>(shape.lengths, order, seed++);
        // Rows where they fit; else the composite radix sort for keys of up to 32 bits; 64-bit keys
        // then go one request at a time by each one's own AUTO choice (the CPU for these sizes).
        std::optional<Algorithm> form;
        if (shape.rows) {
          form = Algorithm::kBitonic;
        } else if (sizeof(T) <= 4) {
          form = Algorithm::kRadix;
        }
        ExpectBatchMatchesCpu(spec, requests, form,
                              shape.name + (order == SortOrder::kAscending ? " asc" : " desc") +
                                  (payload == SortPayload::kIndices ? " indices" : " keys"));
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TYPED_TEST(BatchSort, NamedBitonicAndRadixRunTheirOwnForm) {
  SKIP_WITHOUT_GPU();
  using T = TypeParam;
  std::uint64_t seed = 100;
  for (Shape shape : Shapes()) {
    // 64-bit keys fit neither form when rows do not fit: each request then runs as its own sort, and
    // 20000 one-key sorts test nothing that 64 do not (AUTO's 16384-key threshold, the reason for
    // 20000, plays no part when the form is named). Under compute-sanitizer they took past 9 minutes.
    if (sizeof(T) == 8 && !shape.rows && shape.lengths.size() > 64) shape.lengths.resize(64);
    for (Algorithm algorithm : {Algorithm::kBitonic, Algorithm::kRadix}) {
      for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
        SortSpec spec;
        spec.dtype = DTypeOf<T>::value;
        spec.order = order;
        spec.stable = true;
        spec.payload = SortPayload::kIndices;
        spec.algorithm = algorithm;
        std::vector<Request> requests = MakeRequests<T>(shape.lengths, order, seed++);
        ExpectBatchMatchesCpu(spec, requests, algorithm,
                              shape.name + " " + std::string(AlgorithmName(algorithm)) +
                                  (order == SortOrder::kAscending ? " asc" : " desc"));
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST(BatchRows, FitOnlyWithinOneTileAndBoundedPadding) {
  // No GPU needed: the choice itself.
  auto items = [](std::vector<std::size_t> lengths) {
    std::vector<BatchItem> v(lengths.size());
    for (std::size_t i = 0; i < lengths.size(); ++i) v[i].buffers.count = lengths[i];
    return v;
  };
  EXPECT_TRUE(BatchFitsRows(items({4096, 4096})));
  EXPECT_FALSE(BatchFitsRows(items({4097, 4097})));
  EXPECT_TRUE(BatchFitsRows(items({100, 25})));       // 200 padded for 125 keys
  EXPECT_FALSE(BatchFitsRows(items({100, 1, 1, 1, 1})));  // 500 padded for 104 keys
  EXPECT_FALSE(BatchFitsRows(items({1, 1})));          // rows of one key: nothing to sort
  EXPECT_EQ(BatchRowLength(items({3, 9, 4})), 9u);
}

}  // namespace
}  // namespace gpusort
