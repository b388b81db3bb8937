// The CUDA backend against the CPU backend, bit for bit: every dtype, order and payload of Sort and every
// TopK option, on the adversarial inputs of tests/support (NaN of both signs, -0.0/+0.0, infinities,
// type extremes, all equal, few distinct, sizes just off powers of two) and at 64M keys. The CPU backend
// is itself checked against std::sort / std::stable_sort in tests/cpu, so agreement here means the GPU
// answers exactly. Skips when no GPU is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/runtime.h"
#include "server/backend/auto_policy.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/backend/cuda_backend.h"
#include "server/core/dtype.h"
#include "tests/gpu/backends.h"
#include "tests/gpu/test_max_keys.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"
#include "tests/support/stages.h"

namespace gpusort {
namespace {

using gpusort::testing::Bytes;
using gpusort::testing::Cpu;
using gpusort::testing::Cuda;
using gpusort::testing::EdgeSizes;
using gpusort::testing::HasStage;
using gpusort::testing::kAllPatterns;
using gpusort::testing::MakeInput;
using gpusort::testing::MakeValueBytes;
using gpusort::testing::Pattern;
using gpusort::testing::PatternName;

// Output of one Sort on one backend.
struct SortOutput {
  absl::Status status;
  std::vector<std::byte> keys, values;
  std::vector<int64_t> indices;
  ExecutionReport report;
};

SortOutput RunSort(Backend& backend, const SortSpec& spec, const std::vector<std::byte>& keys,
                   const std::vector<std::byte>& values) {
  SortOutput out;
  out.keys = keys;
  const std::size_t n = keys.size() / ElementSize(spec.dtype);
  SortBuffers buffers;
  buffers.count = n;
  buffers.keys = out.keys;
  if (spec.payload == SortPayload::kValues) {
    out.values.assign(values.size(), std::byte{0xAB});  // poisoned: every byte must be written
    buffers.values = values;
    buffers.values_out = out.values;
  } else if (spec.payload == SortPayload::kIndices) {
    out.indices.assign(n, -7);
    buffers.indices_out = out.indices;
  }
  Cancellation cancellation;
  out.status = RunSort(backend, spec, buffers, cancellation, out.report);
  return out;
}

struct TopKResultBytes {
  absl::Status status;
  std::vector<std::byte> values;
  std::vector<int64_t> indices;
  ExecutionReport report;
};

TopKResultBytes RunTopK(Backend& backend, const TopKSpec& spec, const std::vector<std::byte>& keys) {
  TopKResultBytes out;
  const std::size_t n = keys.size() / ElementSize(spec.dtype);
  TopKBuffers buffers;
  buffers.count = n;
  buffers.keys = keys;
  if (spec.wants_values()) {
    out.values.assign(spec.results() * ElementSize(spec.dtype), std::byte{0xAB});
    buffers.values_out = out.values;
  }
  if (spec.wants_indices()) {
    out.indices.assign(spec.results(), -7);
    buffers.indices_out = out.indices;
  }
  Cancellation cancellation;
  out.status = RunTopK(backend, spec, buffers, cancellation, out.report);
  return out;
}

// The GPU's and the CPU's answers to one Sort, compared.
void ExpectSameSort(const SortSpec& spec, const std::vector<std::byte>& keys, const std::string& what) {
  const std::vector<std::byte> values =
      spec.payload == SortPayload::kValues
          ? MakeValueBytes(keys.size() / ElementSize(spec.dtype) * spec.value_width)
          : std::vector<std::byte>{};
  SortOutput gpu = RunSort(*Cuda(), spec, keys, values);
  SortSpec reference = spec;
  reference.algorithm = Algorithm::kAuto;  // the CPU backend's own
  SortOutput cpu = RunSort(*Cpu(), reference, keys, values);
  ASSERT_TRUE(gpu.status.ok()) << what << ": " << gpu.status;
  ASSERT_TRUE(cpu.status.ok()) << what << ": " << cpu.status;
  EXPECT_EQ(gpu.report.algorithm, spec.algorithm == Algorithm::kAuto ? Algorithm::kRadix : spec.algorithm) << what;
  EXPECT_EQ(gpu.report.backend, BackendKind::kCuda) << what << ": expected the GPU to run it";
  ASSERT_TRUE(gpu.keys == cpu.keys) << what << ": keys differ";
  // Positions and values are fully determined: the sort is stable on both backends.
  ASSERT_TRUE(gpu.indices == cpu.indices) << what << ": indices differ";
  ASSERT_TRUE(gpu.values == cpu.values) << what << ": values differ";
}

void ExpectSameTopK(const TopKSpec& spec, const std::vector<std::byte>& keys, const std::string& what) {
  TopKResultBytes gpu = RunTopK(*Cuda(), spec, keys);
  TopKSpec reference = spec;
  reference.algorithm = Algorithm::kAuto;
  TopKResultBytes cpu = RunTopK(*Cpu(), reference, keys);
  ASSERT_TRUE(gpu.status.ok()) << what << ": " << gpu.status;
  ASSERT_TRUE(cpu.status.ok()) << what << ": " << cpu.status;
  EXPECT_EQ(gpu.report.backend, BackendKind::kCuda) << what << ": expected the GPU to run it";
  // Sorted output with the smaller-index tie rule makes the answer unique.
  ASSERT_TRUE(gpu.values == cpu.values) << what << ": values differ";
  ASSERT_TRUE(gpu.indices == cpu.indices) << what << ": indices differ";
}

// With sorted = false the k results of a row may come in any order: both answers are put in one
// canonical order per row (by key bytes, then index; by index alone without values) before comparing.
void CanonicalizeRows(const TopKSpec& spec, TopKResultBytes& r) {
  const std::size_t w = ElementSize(spec.dtype), k = spec.k;
  for (std::size_t row = 0; row < spec.rows; ++row) {
    std::vector<std::size_t> order(k);
    for (std::size_t i = 0; i < k; ++i) order[i] = row * k + i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (spec.wants_values()) {
        const int c = std::memcmp(r.values.data() + a * w, r.values.data() + b * w, w);
        if (c != 0) return c < 0;
      }
      return spec.wants_indices() ? r.indices[a] < r.indices[b] : false;
    });
    std::vector<std::byte> values(k * w);
    std::vector<int64_t> indices(k);
    for (std::size_t i = 0; i < k; ++i) {
      if (spec.wants_values()) std::memcpy(values.data() + i * w, r.values.data() + order[i] * w, w);
      if (spec.wants_indices()) indices[i] = r.indices[order[i]];
    }
    if (spec.wants_values()) std::memcpy(r.values.data() + row * k * w, values.data(), k * w);
    if (spec.wants_indices()) std::copy(indices.begin(), indices.end(), r.indices.begin() + row * k);
  }
}

// The GPU's answer with `spec` (any algorithm, sorted or not) against the CPU's sorted one.
void ExpectSameTopKAnyOrder(const TopKSpec& spec, const std::vector<std::byte>& keys, const std::string& what) {
  if (spec.sorted) return ExpectSameTopK(spec, keys, what);
  TopKResultBytes gpu = RunTopK(*Cuda(), spec, keys);
  TopKSpec reference = spec;
  reference.algorithm = Algorithm::kAuto;
  reference.sorted = true;
  TopKResultBytes cpu = RunTopK(*Cpu(), reference, keys);
  ASSERT_TRUE(gpu.status.ok()) << what << ": " << gpu.status;
  ASSERT_TRUE(cpu.status.ok()) << what << ": " << cpu.status;
  CanonicalizeRows(spec, gpu);
  CanonicalizeRows(spec, cpu);
  ASSERT_TRUE(gpu.values == cpu.values) << what << ": values differ";
  ASSERT_TRUE(gpu.indices == cpu.indices) << what << ": indices differ";
}

template <typename T>
class CudaVsCpu : public ::testing::Test {};
using AllKeyTypes = ::testing::Types<int32_t, uint32_t, int64_t, uint64_t, float, double, Float16, BFloat16, int16_t,
                                     uint16_t, int8_t, uint8_t>;
TYPED_TEST_SUITE(CudaVsCpu, AllKeyTypes);

TYPED_TEST(CudaVsCpu, SortEveryOrderAndPayloadOnEveryPattern) {
  SKIP_WITHOUT_GPU();
  using T = TypeParam;
  struct PayloadCase {
    SortPayload payload;
    std::size_t width;
  };
  const PayloadCase payloads[] = {{SortPayload::kNone, 0},   {SortPayload::kIndices, 0},
                                  {SortPayload::kValues, 4}, {SortPayload::kValues, 8},
                                  {SortPayload::kValues, 1}, {SortPayload::kValues, 12},
                                  {SortPayload::kValues, 16}};
  std::vector<std::size_t> sizes = EdgeSizes();
  sizes.push_back((std::size_t{1} << 20) + 3);
  for (Pattern pattern : kAllPatterns) {
    for (std::size_t n : sizes) {
      const std::vector<std::byte> keys = Bytes(MakeInput<T>(pattern, n, n + 11));
      for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
        for (const PayloadCase& p : payloads) {
          SortSpec spec;
          spec.dtype = DTypeOf<T>::value;
          spec.order = order;
          spec.payload = p.payload;
          spec.value_width = p.width;
          spec.stable = true;
          spec.algorithm = Algorithm::kRadix;  // AUTO would answer small arrays on the CPU
          ExpectSameSort(spec, keys,
                         PatternName(pattern) + " n=" + std::to_string(n) +
                             (order == SortOrder::kAscending ? " asc" : " desc") +
                             " payload=" + std::to_string(static_cast<int>(p.payload)) +
                             " width=" + std::to_string(p.width));
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// The shared-memory form (a Sort in Memory::kRegisteredHost: keys DMA'd as they are and converted on the device, narrow
// keys widened there), into a separate output range as a region request may ask.
TYPED_TEST(CudaVsCpu, PinnedSortMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  using T = TypeParam;
  for (Pattern pattern : kAllPatterns) {
    for (std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{4097}, (std::size_t{1} << 20) + 3}) {
      const std::vector<std::byte> keys = Bytes(MakeInput<T>(pattern, n, n + 3));
      for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
        for (SortPayload payload : {SortPayload::kNone, SortPayload::kIndices}) {
          // RADIX by name: AUTO would leave the small ones to the CPU.
          const SortSpec spec{.dtype = DTypeOf<T>::value,
                              .order = order,
                              .stable = true,
                              .payload = payload,
                              .algorithm = Algorithm::kRadix};
          const std::string what = PatternName(pattern) + " n=" + std::to_string(n) +
                                   (order == SortOrder::kAscending ? " asc" : " desc") +
                                   (payload == SortPayload::kIndices ? " indices" : "");
          SortOutput gpu;
          gpu.keys.assign(keys.size(), std::byte{0xAB});
          gpu.indices.assign(payload == SortPayload::kIndices ? n : 0, -7);
          SortBuffers buffers{.count = n, .keys = gpu.keys, .indices_out = gpu.indices};
          Cancellation cancellation;
          gpu.status = RunSort(*Cuda(), spec, buffers, cancellation, gpu.report, Memory::kRegisteredHost, keys);
          SortSpec reference = spec;
          reference.algorithm = Algorithm::kAuto;
          const SortOutput cpu = RunSort(*Cpu(), reference, keys, {});
          ASSERT_TRUE(gpu.status.ok()) << what << ": " << gpu.status;
          ASSERT_TRUE(cpu.status.ok()) << what << ": " << cpu.status;
          EXPECT_EQ(gpu.report.algorithm, Algorithm::kRadix) << what << ": expected the GPU's radix sort";
          ASSERT_TRUE(gpu.keys == cpu.keys) << what << ": keys differ";
          ASSERT_TRUE(gpu.indices == cpu.indices) << what << ": indices differ";
        }
      }
    }
  }
}

// Sort with rows: AUTO (BITONIC rows up to 4096 keys, else CUB's segmented sort), BITONIC and RADIX by
// name, against the CPU's rows (each row sorted alone, tests/cpu/row_sort_test.cc), every payload.
TYPED_TEST(CudaVsCpu, RowSortEveryShapeAndAlgorithm) {
  SKIP_WITHOUT_GPU();
  using T = TypeParam;
  struct Shape {
    std::size_t rows, length;
  };
  for (Shape shape : {Shape{7, 1}, Shape{3, 257}, Shape{1000, 8}, Shape{64, 4096}, Shape{5, 4097}, Shape{2, 300001}}) {
    for (Pattern pattern : {Pattern::kRandom, Pattern::kSpecials, Pattern::kFewDistinct, Pattern::kReversed}) {
      const std::vector<std::byte> keys = Bytes(MakeInput<T>(pattern, shape.rows * shape.length, shape.length));
      for (Algorithm algorithm : {Algorithm::kAuto, Algorithm::kBitonic, Algorithm::kRadix}) {
        if (algorithm == Algorithm::kBitonic && shape.length > kernels::kBitonicRowsMaxLength) continue;
        for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
          for (auto [payload, width] : {std::pair{SortPayload::kNone, 0}, std::pair{SortPayload::kIndices, 0},
                                        std::pair{SortPayload::kValues, 8}, std::pair{SortPayload::kValues, 3}}) {
            const SortSpec spec{.dtype = DTypeOf<T>::value,
                                .order = order,
                                .stable = true,
                                .payload = payload,
                                .value_width = static_cast<std::size_t>(width),
                                .algorithm = algorithm,
                                .rows = shape.rows};
            const std::string what = std::string(AlgorithmName(algorithm)) + " " + PatternName(pattern) +
                                     " rows=" + std::to_string(shape.rows) + " length=" +
                                     std::to_string(shape.length) + (order == SortOrder::kAscending ? " asc" : " desc") +
                                     " payload=" + std::to_string(static_cast<int>(payload)) +
                                     " width=" + std::to_string(width);
            const std::vector<std::byte> values =
                payload == SortPayload::kValues ? MakeValueBytes(keys.size() / sizeof(T) * width) : std::vector<std::byte>{};
            SortOutput gpu = RunSort(*Cuda(), spec, keys, values);
            SortSpec reference = spec;
            reference.algorithm = Algorithm::kAuto;
            SortOutput cpu = RunSort(*Cpu(), reference, keys, values);
            ASSERT_TRUE(gpu.status.ok()) << what << ": " << gpu.status;
            ASSERT_TRUE(cpu.status.ok()) << what << ": " << cpu.status;
            // AUTO leaves small arrays to the CPU (auto_policy.h), then picks the row kernel by length.
            const Algorithm want = algorithm != Algorithm::kAuto ? algorithm
                                   : shape.rows * shape.length < kAutoSortCpuBelowKeys ? Algorithm::kCpu
                                   : shape.length <= kernels::kBitonicRowsMaxLength    ? Algorithm::kBitonic
                                                                                       : Algorithm::kRadix;
            EXPECT_EQ(gpu.report.algorithm, want) << what;
            ASSERT_TRUE(gpu.keys == cpu.keys) << what << ": keys differ";
            ASSERT_TRUE(gpu.indices == cpu.indices) << what << ": indices differ";
            ASSERT_TRUE(gpu.values == cpu.values) << what << ": values differ";
          }
        }
      }
    }
  }
}

// TopK of segments (each one's segmented sort, then its first min(k, length)): against the CPU's, for k
// under, between and over the lengths; AUTO takes RADIX, and the selection kernels are refused by name.
TYPED_TEST(CudaVsCpu, SegmentTopKMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const std::vector<std::vector<std::size_t>> lengths = {{0, 1, 0, 7, 300, 1}, {5000, 0, 70001}};
  for (std::size_t n : {std::size_t{20000}, std::size_t{300007}}) {
    for (const auto& pattern_lengths : lengths) {
      const auto offsets =
          std::make_shared<const std::vector<uint64_t>>(gpusort::testing::SegmentOffsetsOf(n, pattern_lengths));
      for (Pattern pattern : {Pattern::kSpecials, Pattern::kFewDistinct}) {
        const std::vector<std::byte> keys = Bytes(MakeInput<T>(pattern, n, n + offsets->size()));
        for (std::size_t k : {std::size_t{1}, std::size_t{64}, std::size_t{6000}}) {
          for (bool largest : {true, false}) {
            // RADIX by name: AUTO may leave small answers to the CPU.
            TopKSpec spec{.dtype = DTypeOf<T>::value, .k = k, .largest = largest, .sorted = true,
                          .algorithm = Algorithm::kRadix};
            spec.SetSegments(offsets);
            const std::string what = PatternName(pattern) + " n=" + std::to_string(n) + " segments=" +
                                     std::to_string(offsets->size() - 1) + " k=" + std::to_string(k) +
                                     (largest ? " largest" : " smallest");
            ExpectSameTopK(spec, keys, what);
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
  TopKSpec named{.dtype = DTypeOf<T>::value, .k = 4, .algorithm = Algorithm::kSmallK};
  named.SetSegments(std::make_shared<const std::vector<uint64_t>>(std::vector<uint64_t>{0, 3, 8}));
  const TopKResultBytes refused = RunTopK(*Cuda(), named, Bytes(MakeInput<T>(Pattern::kRandom, 8, 1)));
  EXPECT_EQ(refused.status.code(), absl::StatusCode::kInvalidArgument) << refused.status;
}

// Segments by offsets: RADIX (CUB's segmented sort throughout) and AUTO (bitonic tiles of every size
// for segments of up to 4096 keys, CUB for longer ones): empty, one-key, tile-sized and long segments,
// every payload, against the CPU's segments.
TYPED_TEST(CudaVsCpu, SegmentSortMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const std::vector<std::vector<std::size_t>> lengths = {
      {0, 1, 0, 7, 300, 1}, {5000, 0, 70001}, {1, 2, 3, 0, 513}, {4096, 4097, 2048, 2049, 1024, 1025, 17, 33, 65, 129, 257}};
  for (std::size_t n : {std::size_t{20000}, std::size_t{300007}}) {
    for (const auto& pattern_lengths : lengths) {
      const auto offsets =
          std::make_shared<const std::vector<uint64_t>>(gpusort::testing::SegmentOffsetsOf(n, pattern_lengths));
      for (Pattern pattern : {Pattern::kRandom, Pattern::kSpecials, Pattern::kFewDistinct}) {
        for (Algorithm algorithm : {Algorithm::kRadix, Algorithm::kAuto}) {
        const std::vector<std::byte> keys = Bytes(MakeInput<T>(pattern, n, n + offsets->size()));
        for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
          for (auto [payload, width] : {std::pair{SortPayload::kNone, 0}, std::pair{SortPayload::kIndices, 0},
                                        std::pair{SortPayload::kValues, 8}, std::pair{SortPayload::kValues, 3}}) {
            SortSpec spec{.dtype = DTypeOf<T>::value,
                          .order = order,
                          .stable = true,
                          .payload = payload,
                          .value_width = static_cast<std::size_t>(width),
                          .algorithm = algorithm};
            spec.segment_offsets = offsets;
            const std::string what = PatternName(pattern) + " n=" + std::to_string(n) + " segments=" +
                                     std::to_string(offsets->size() - 1) +
                                     (order == SortOrder::kAscending ? " asc" : " desc") +
                                     " payload=" + std::to_string(static_cast<int>(payload)) +
                                     " width=" + std::to_string(width) + " " + std::string(AlgorithmName(algorithm));
            const std::vector<std::byte> values =
                payload == SortPayload::kValues ? MakeValueBytes(n * width) : std::vector<std::byte>{};
            SortOutput gpu = RunSort(*Cuda(), spec, keys, values);
            SortSpec reference = spec;
            reference.algorithm = Algorithm::kAuto;
            SortOutput cpu = RunSort(*Cpu(), reference, keys, values);
            ASSERT_TRUE(gpu.status.ok()) << what << ": " << gpu.status;
            ASSERT_TRUE(cpu.status.ok()) << what << ": " << cpu.status;
            const bool all_tiles = spec.LongestSegment(n) <= kernels::kBitonicRowsMaxLength;
            EXPECT_EQ(gpu.report.algorithm,
                      algorithm == Algorithm::kAuto && all_tiles ? Algorithm::kBitonic : Algorithm::kRadix)
                << what;
            ASSERT_TRUE(gpu.keys == cpu.keys) << what << ": keys differ";
            ASSERT_TRUE(gpu.indices == cpu.indices) << what << ": indices differ";
            ASSERT_TRUE(gpu.values == cpu.values) << what << ": values differ";
          }
        }
        }
      }
    }
  }
}

// A named BITONIC sorts segments when every one fits a tile of 4096 keys, and is refused otherwise.
TEST(CudaSegments, BitonicTakesSegmentsOfAtMost4096Keys) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::byte> keys = Bytes(MakeInput<float>(Pattern::kSpecials, 20000, 3));
  for (const std::vector<std::size_t>& lengths : {std::vector<std::size_t>{0, 1, 4096, 3}, {4097, 5}}) {
    SortSpec spec{.dtype = DType::kFloat32, .stable = true, .payload = SortPayload::kIndices,
                  .algorithm = Algorithm::kBitonic};
    spec.segment_offsets = std::make_shared<const std::vector<uint64_t>>(gpusort::testing::SegmentOffsetsOf(20000, lengths));
    SortOutput gpu = RunSort(*Cuda(), spec, keys, {});
    if (lengths[0] == 4097) {
      EXPECT_EQ(gpu.status.code(), absl::StatusCode::kInvalidArgument) << gpu.status;
      EXPECT_NE(std::string(gpu.status.message()).find("a segment holds 4097"), std::string::npos) << gpu.status;
      continue;
    }
    ASSERT_TRUE(gpu.status.ok()) << gpu.status;
    EXPECT_EQ(gpu.report.algorithm, Algorithm::kBitonic);
    SortSpec reference = spec;
    reference.algorithm = Algorithm::kAuto;
    SortOutput cpu = RunSort(*Cpu(), reference, keys, {});
    ASSERT_TRUE(cpu.status.ok()) << cpu.status;
    EXPECT_TRUE(gpu.keys == cpu.keys);
    EXPECT_TRUE(gpu.indices == cpu.indices);
  }
}

TEST(CudaBackend, RowsRefuseTheSortsThatSortOneArray) {
  SKIP_WITHOUT_GPU();
  const auto keys = Bytes(MakeInput<uint32_t>(Pattern::kRandom, 4 * 5000, 1));
  for (Algorithm algorithm : {Algorithm::kMerge, Algorithm::kOddEven, Algorithm::kQuicksort, Algorithm::kBitonic}) {
    const SortSpec spec{.algorithm = algorithm, .rows = 4};
    SortOutput out = RunSort(*Cuda(), spec, keys, {});
    EXPECT_EQ(out.status.code(), absl::StatusCode::kInvalidArgument) << AlgorithmName(algorithm) << ": " << out.status;
    EXPECT_EQ(Cuda()->CheckSortLimits(spec, 4 * 5000).code(), absl::StatusCode::kInvalidArgument)
        << AlgorithmName(algorithm);
  }
  // Bitonic sorts equal rows only, however short the segments.
  SortSpec segments{.algorithm = Algorithm::kBitonic};
  segments.segment_offsets = std::make_shared<const std::vector<uint64_t>>(std::vector<uint64_t>{0, 10, 20000});
  EXPECT_EQ(RunSort(*Cuda(), segments, keys, {}).status.code(), absl::StatusCode::kInvalidArgument);
}

TYPED_TEST(CudaVsCpu, TopKEveryOptionOnEveryPattern) {
  SKIP_WITHOUT_GPU();
  using T = TypeParam;
  struct Shape {
    std::size_t rows, row_length;
  };
  const Shape shapes[] = {{1, 1}, {1, 33}, {1, 4097}, {1, (1u << 20) + 3}, {3, 257}, {16, 1025}, {1000, 8}};
  // RADIX sorts; the selection kernels select, each up to its k limit (over it: the limit test below).
  const std::pair<Algorithm, std::size_t> algorithms[] = {{Algorithm::kRadix, SIZE_MAX},
                                                          {Algorithm::kRadixSelect, SIZE_MAX},
                                                          {Algorithm::kSmallK, 1024},
                                                          {Algorithm::kThreadLists, 128}};
  for (Pattern pattern : kAllPatterns) {
    for (const Shape& shape : shapes) {
      const std::size_t n = shape.rows * shape.row_length;
      const std::vector<std::byte> keys = Bytes(MakeInput<T>(pattern, n, n + 5));
      const std::size_t m = shape.row_length;
      for (const auto& [algorithm, max_k] : algorithms) {
        // RADIX: every output; the selection kernels (whose outputs are two independent pointers, each
        // covered by the kernel tests) both values and indices, sorted and unsorted. k = 2m/3 only on
        // rows short enough for the CPU reference to stay quick.
        const bool radix = algorithm == Algorithm::kRadix;
        for (std::size_t k : {std::size_t{1}, std::min<std::size_t>(7, m), m <= 5000 ? m - m / 3 : m, m}) {
          if (k > max_k) k = max_k;
          for (bool largest : {true, false}) {
            for (TopKOutput output : {TopKOutput::kValuesAndIndices, TopKOutput::kValues, TopKOutput::kIndices}) {
              for (bool sorted : {true, false}) {
                if (radix ? !sorted : output != TopKOutput::kValuesAndIndices) continue;
                TopKSpec spec;
                spec.dtype = DTypeOf<T>::value;
                spec.k = k;
                spec.largest = largest;
                spec.sorted = sorted;
                spec.output = output;
                spec.rows = shape.rows;
                spec.algorithm = algorithm;
                ExpectSameTopKAnyOrder(spec, keys,
                                       std::string(AlgorithmName(algorithm)) + " " + PatternName(pattern) +
                                           " rows=" + std::to_string(shape.rows) + " m=" + std::to_string(m) +
                                           " k=" + std::to_string(k) + (largest ? " largest" : " smallest") +
                                           " output=" + std::to_string(static_cast<int>(output)) +
                                           (sorted ? " sorted" : " unsorted"));
                if (::testing::Test::HasFatalFailure()) return;
              }
            }
          }
        }
      }
    }
  }
}

TEST(CudaBackend, SixtyFourMillionKeys) {
  SKIP_WITHOUT_GPU();
  const std::size_t n = std::size_t{64} << 20;
  SKIP_OVER_TEST_MAX_KEYS(n);
  {
    SortSpec spec;
    spec.dtype = DType::kUInt32;
    spec.algorithm = Algorithm::kAuto;
    ExpectSameSort(spec, Bytes(MakeInput<uint32_t>(Pattern::kRandom, n, 64)), "64M u32");
  }
  {
    SortSpec spec;
    spec.dtype = DType::kFloat32;
    spec.order = SortOrder::kDescending;
    spec.payload = SortPayload::kIndices;
    ExpectSameSort(spec, Bytes(MakeInput<float>(Pattern::kSpecials, n, 65)), "64M f32 specials argsort");
  }
  {
    TopKSpec spec;
    spec.dtype = DType::kFloat32;
    spec.k = 1000;
    ExpectSameTopK(spec, Bytes(MakeInput<float>(Pattern::kRandom, n, 66)), "64M f32 top 1000");
  }
}

TEST(CudaBackend, SmallRangeKeysSortRightOverTheirBitsOrEveryBit) {
  SKIP_WITHOUT_GPU();
  // Keys from [0, 2^16) and keys that agree in their low bits: the varying-bit range must not lose order.
  // Up to 4 MiB of keys a radix sort takes every bit (SortJob::kSortsEveryBitUpToBytes), above it only
  // those that vary: sizes on each side, 32- and 64-bit.
  std::mt19937_64 rng(3);
  for (std::size_t n : {std::size_t{1} << 20, (std::size_t{1} << 20) + 3}) {
    std::vector<uint32_t> small(n), high(n);
    for (auto& k : small) k = static_cast<uint32_t>(rng() & 0xFFFF);
    for (auto& k : high) k = static_cast<uint32_t>(rng() & 0xFF000000u) | 0x5A5Au;
    for (const auto& keys : {small, high}) {
      for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
        SortSpec spec;
        spec.dtype = DType::kUInt32;
        spec.order = order;
        spec.payload = SortPayload::kIndices;
        spec.algorithm = Algorithm::kRadix;
        ExpectSameSort(spec, Bytes(keys), "small range u32 " + std::to_string(n));
      }
    }
  }
  for (std::size_t n : {std::size_t{1} << 19, (std::size_t{1} << 19) + 5}) {
    std::vector<int64_t> keys(n);
    // Negative, all of them, varying in bits 10-21 only.
    for (auto& k : keys) k = static_cast<int64_t>(rng() % 4096) * 1024 - (int64_t{1} << 50);
    for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
      SortSpec spec;
      spec.dtype = DType::kInt64;
      spec.order = order;
      spec.algorithm = Algorithm::kRadix;
      ExpectSameSort(spec, Bytes(keys), "small range i64 " + std::to_string(n));
    }
  }
}

TEST(CudaBackend, AutoAnswersTinyArraysOnTheCpuAndLargeOnTheGpu) {
  SKIP_WITHOUT_GPU();
  SortSpec spec;
  spec.dtype = DType::kFloat32;
  SortOutput tiny = RunSort(*Cuda(), spec, Bytes(MakeInput<float>(Pattern::kRandom, 100, 1)), {});
  ASSERT_TRUE(tiny.status.ok()) << tiny.status;
  ASSERT_TRUE(tiny.report.backend.has_value());
  EXPECT_EQ(*tiny.report.backend, BackendKind::kCpu);
  SortOutput large = RunSort(*Cuda(), spec, Bytes(MakeInput<float>(Pattern::kRandom, 1 << 20, 1)), {});
  ASSERT_TRUE(large.status.ok()) << large.status;
  EXPECT_EQ(large.report.backend, BackendKind::kCuda);
  EXPECT_EQ(large.report.algorithm, Algorithm::kRadix);
  std::vector<Stage> stages;
  for (const StageTime& s : large.report.stages) stages.push_back(s.stage);
  for (Stage want : {Stage::kH2d, Stage::kKernel, Stage::kD2h}) {
    EXPECT_NE(std::find(stages.begin(), stages.end(), want), stages.end()) << "missing stage " << StageName(want);
  }
}

TEST(CudaBackend, AutoTopKTakesSmallKOnTheCpuAndLargeKOnTheGpu) {
  SKIP_WITHOUT_GPU();
  const auto keys = Bytes(MakeInput<float>(Pattern::kRandom, 1 << 20, 3));
  TopKSpec spec;
  spec.dtype = DType::kFloat32;
  spec.k = 100;
  TopKResultBytes small_k = RunTopK(*Cuda(), spec, keys);
  ASSERT_TRUE(small_k.status.ok()) << small_k.status;
  ASSERT_TRUE(small_k.report.backend.has_value());
  EXPECT_EQ(*small_k.report.backend, BackendKind::kCpu);
  spec.k = 1 << 17;
  TopKResultBytes large_k = RunTopK(*Cuda(), spec, keys);
  ASSERT_TRUE(large_k.status.ok()) << large_k.status;
  EXPECT_EQ(large_k.report.backend, BackendKind::kCuda);
}

TEST(CudaBackend, AlgorithmsItLacksAreUnimplementedWithTheList) {
  SKIP_WITHOUT_GPU();
  TopKSpec spec;
  spec.k = 1;
  spec.algorithm = Algorithm::kBitonic;
  const auto keys = Bytes(MakeInput<uint32_t>(Pattern::kRandom, 10, 1));
  TopKResultBytes out = RunTopK(*Cuda(), spec, keys);
  EXPECT_EQ(out.status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(out.status.message()).find("radix"), std::string::npos) << out.status;
}

// The comparison sorts a caller can name, bit for bit against the CPU: every dtype, order and payload
// on every pattern at the edge sizes, and 2^20+1 random keys (ODD_EVEN up to its limit).
TYPED_TEST(CudaVsCpu, NamedComparisonSortsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const std::pair<SortPayload, std::size_t> payloads[] = {
      {SortPayload::kNone, 0}, {SortPayload::kIndices, 0}, {SortPayload::kValues, 4}, {SortPayload::kValues, 12}};
  for (Algorithm algorithm : {Algorithm::kMerge, Algorithm::kBitonic, Algorithm::kOddEven, Algorithm::kQuicksort}) {
    const std::size_t limit = algorithm == Algorithm::kOddEven ? 4096 : std::size_t{1} << 40;
    auto run = [&](Pattern pattern, std::size_t n, SortPayload payload, std::size_t width) {
      const std::vector<std::byte> keys = Bytes(MakeInput<T>(pattern, n, n + 5));
      for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
        SortSpec spec;
        spec.dtype = DTypeOf<T>::value;
        spec.order = order;
        spec.payload = payload;
        spec.value_width = width;
        spec.stable = true;
        spec.algorithm = algorithm;
        ExpectSameSort(spec, keys,
                       std::string(AlgorithmName(algorithm)) + " " + PatternName(pattern) + " n=" + std::to_string(n) +
                           (order == SortOrder::kAscending ? " asc" : " desc") +
                           " payload=" + std::to_string(static_cast<int>(payload)) + " width=" + std::to_string(width));
      }
    };
    for (Pattern pattern : kAllPatterns) {
      for (std::size_t n : EdgeSizes()) {
        if (n > limit) continue;
        for (const auto& [payload, width] : payloads) {
          run(pattern, n, payload, width);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
    if (limit >= (std::size_t{1} << 20) + 1) {
      run(Pattern::kRandom, (std::size_t{1} << 20) + 1, SortPayload::kNone, 0);
      run(Pattern::kFewDistinct, (std::size_t{1} << 20) + 1, SortPayload::kIndices, 0);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// AUTO's top-k over rows short enough for one bitonic tile sorts them with the bitonic row kernel; the
// answer (values, and row positions by the tie rule) is the CPU's, bit for bit.
// AUTO's TopK kernel on the GPU (auto_policy.h ChooseTopKKernel): radix select for one row, the small-k
// selection for rows with k up to 1024, else the bitonic row sort for rows of up to 4096 keys and CUB's
// segmented sort beyond. Each choice must give the CPU's answer.
TEST(CudaBackend, AutoTopKPicksItsKernelByShape) {
  SKIP_WITHOUT_GPU();
  struct Shape {
    std::size_t rows, length, k;
    Algorithm want;
  };
  for (const Shape& shape : {Shape{1, 1 << 18, 1000, Algorithm::kRadixSelect}, Shape{64, 1024, 512, Algorithm::kSmallK},
                             Shape{16, 4096, 200, Algorithm::kSmallK}, Shape{8, 4097, 300, Algorithm::kSmallK},
                             Shape{16, 4096, 2000, Algorithm::kBitonic}, Shape{1024, 1030, 1029, Algorithm::kBitonic},
                             Shape{8, 4097, 1500, Algorithm::kRadix}}) {
    for (Pattern pattern : kAllPatterns) {
      for (bool largest : {true, false}) {
        TopKSpec spec;
        spec.dtype = DType::kFloat32;
        spec.rows = shape.rows;
        spec.k = shape.k;
        spec.largest = largest;
        spec.sorted = true;
        spec.algorithm = Algorithm::kAuto;
        const auto keys = Bytes(MakeInput<float>(pattern, shape.rows * shape.length, shape.length));
        const std::string what = "rows=" + std::to_string(shape.rows) + " length=" + std::to_string(shape.length) +
                                 " " + PatternName(pattern) + (largest ? " largest" : " smallest");
        ExpectSameTopK(spec, keys, what);
        TopKResultBytes gpu = RunTopK(*Cuda(), spec, keys);
        EXPECT_EQ(gpu.report.algorithm, shape.want) << what;
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// One row of 16-bit keys goes to radix select, which selects them at their own width
// (KeyCoding::native_width) at every k; named SMALL_K selects them at their width too. Both give the CPU's
// answer. Every k is over kAutoTopKCpuUpToK, so that the engine's AUTO keeps the work on the GPU.
TEST(CudaBackend, TopKOfOneSixteenBitRowUsesRadixSelectAndSmallKAtTheKeysWidth) {
  SKIP_WITHOUT_GPU();
  for (const auto& [k, algorithm, want] :
       {std::tuple{std::size_t{200}, Algorithm::kAuto, Algorithm::kRadixSelect},
        std::tuple{std::size_t{1025}, Algorithm::kAuto, Algorithm::kRadixSelect},
        std::tuple{std::size_t{1024}, Algorithm::kSmallK, Algorithm::kSmallK}}) {
    for (Pattern pattern : kAllPatterns) {
      for (DType dtype : {DType::kBFloat16, DType::kFloat16, DType::kInt16}) {
        TopKSpec spec;
        spec.dtype = dtype;
        spec.k = k;
        spec.largest = pattern != Pattern::kSorted;
        spec.sorted = true;
        spec.algorithm = algorithm;
        const std::size_t n = (1 << 20) + 5;
        const auto keys = dtype == DType::kBFloat16  ? Bytes(MakeInput<BFloat16>(pattern, n, k))
                          : dtype == DType::kFloat16 ? Bytes(MakeInput<Float16>(pattern, n, k))
                                                     : Bytes(MakeInput<std::int16_t>(pattern, n, k));
        const std::string what = "k=" + std::to_string(k) + " " + PatternName(pattern) + " " + std::string(DTypeName(dtype));
        ExpectSameTopK(spec, keys, what);
        EXPECT_EQ(RunTopK(*Cuda(), spec, keys).report.algorithm, want) << what;
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST(CudaBackend, SelectionKernelsOverTheirKLimitAreInvalidArgumentSayingSo) {
  SKIP_WITHOUT_GPU();
  const auto keys = Bytes(MakeInput<float>(Pattern::kRandom, 4096, 1));
  for (const auto& [algorithm, limit] : {std::pair{Algorithm::kSmallK, 1024}, std::pair{Algorithm::kThreadLists, 128}}) {
    TopKSpec spec;
    spec.dtype = DType::kFloat32;
    spec.algorithm = algorithm;
    spec.k = limit;
    TopKResultBytes at_limit = RunTopK(*Cuda(), spec, keys);
    EXPECT_TRUE(at_limit.status.ok()) << at_limit.status;
    EXPECT_TRUE(Cuda()->CheckTopKLimits(spec, 4096).ok());
    spec.k = limit + 1;
    TopKResultBytes over = RunTopK(*Cuda(), spec, keys);
    EXPECT_EQ(over.status.code(), absl::StatusCode::kInvalidArgument) << over.status;
    EXPECT_NE(std::string(over.status.message()).find("at most " + std::to_string(limit)), std::string::npos)
        << over.status;
    // The published limit (what the service checks before admission) says exactly what the run says.
    EXPECT_EQ(Cuda()->CheckTopKLimits(spec, 4096), over.status);
  }
  // AUTO with k up to 128 is the CPU's at every size (auto_policy.h), which has no limit; larger k goes
  // to the GPU, which takes one row of any length (more than 2^31-1 keys in runs, issue 19) but rows of
  // at most 2^31-1 keys in all.
  TopKSpec any;
  any.dtype = DType::kFloat32;
  any.k = 10;
  EXPECT_TRUE(Cuda()->CheckTopKLimits(any, std::size_t{1} << 31).ok());
  any.k = 1000;
  EXPECT_TRUE(Cuda()->CheckTopKLimits(any, std::size_t{1} << 31).ok());
  any.rows = 2;
  EXPECT_EQ(Cuda()->CheckTopKLimits(any, std::size_t{1} << 31).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Cuda()->CheckTopKLimits(any, (std::size_t{1} << 31) - 2).ok());
  SortSpec sort;
  sort.algorithm = Algorithm::kRadixSelect;  // a top-k kernel cannot sort
  SortOutput out = RunSort(*Cuda(), sort, Bytes(MakeInput<uint32_t>(Pattern::kRandom, 100, 1)), {});
  EXPECT_EQ(out.status.code(), absl::StatusCode::kUnimplemented) << out.status;
}

TEST(CudaBackend, OddEvenOverItsLimitIsInvalidArgumentSayingSo) {
  SKIP_WITHOUT_GPU();
  SortSpec spec;
  spec.algorithm = Algorithm::kOddEven;
  SortOutput at_limit = RunSort(*Cuda(), spec, Bytes(MakeInput<uint32_t>(Pattern::kRandom, 4096, 1)), {});
  EXPECT_TRUE(at_limit.status.ok()) << at_limit.status;
  SortOutput over = RunSort(*Cuda(), spec, Bytes(MakeInput<uint32_t>(Pattern::kRandom, 4097, 1)), {});
  EXPECT_EQ(over.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(over.status.message()).find("at most 4096"), std::string::npos) << over.status;
  // The published limits (what the service checks before admission) say exactly what the runs say.
  EXPECT_TRUE(Cuda()->CheckSortLimits(spec, 4096).ok());
  EXPECT_EQ(Cuda()->CheckSortLimits(spec, 4097), over.status);
  SortSpec auto_spec;
  EXPECT_TRUE(Cuda()->CheckSortLimits(auto_spec, 100).ok());  // the CPU's, which has no limit
  // One array of more than 2^31-1 keys is sorted in runs (issue 19); rows are not cut into runs.
  EXPECT_TRUE(Cuda()->CheckSortLimits(auto_spec, std::size_t{1} << 31).ok());
  auto_spec.rows = 2;
  EXPECT_EQ(Cuda()->CheckSortLimits(auto_spec, std::size_t{1} << 31).code(), absl::StatusCode::kInvalidArgument);
  SortSpec cpu_spec;
  cpu_spec.algorithm = Algorithm::kCpu;
  EXPECT_TRUE(Cuda()->CheckSortLimits(cpu_spec, std::size_t{1} << 31).ok());
}

// A request larger than the device memory it may use: one array is sorted in runs (issue 19: merged on
// the GPU; issue 44: where the runs do not fit there either, as here, they are kept in pinned host memory
// and still merged on the GPU);
// what cannot be cut into runs (rows) is refused with RESOURCE_EXHAUSTED and a message that says how
// much it needed; the backend keeps serving afterwards.
TEST(CudaBackend, OutOfDeviceMemoryIsRunsOrResourceExhausted) {
  SKIP_WITHOUT_GPU();
  auto small = MakeCudaBackend({.engine = {.streams = 1, .memory_limit_bytes = std::size_t{64} << 20}});
  ASSERT_TRUE(small.ok()) << small.status();
  SortSpec spec;
  spec.algorithm = Algorithm::kRadix;
  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, std::size_t{16} << 20, 1);  // 64 MiB
  SortOutput in_runs = RunSort(**small, spec, Bytes(keys), {});
  ASSERT_TRUE(in_runs.status.ok()) << in_runs.status;
  std::vector<uint32_t> want = keys;
  std::sort(want.begin(), want.end());
  EXPECT_TRUE(in_runs.keys == Bytes(want));
  EXPECT_TRUE(HasStage(in_runs.report, Stage::kDeviceMerge));

  spec.rows = 16;  // 16 rows of 1M keys: rows are not cut into runs
  SortOutput refused = RunSort(**small, spec, Bytes(keys), {});
  EXPECT_EQ(refused.status.code(), absl::StatusCode::kResourceExhausted) << refused.status;
  EXPECT_NE(std::string(refused.status.message()).find("bytes of device memory"), std::string::npos)
      << refused.status;
  spec.rows = 1;
  SortOutput fits = RunSort(**small, spec, Bytes(MakeInput<uint32_t>(Pattern::kRandom, 1 << 20, 2)), {});
  EXPECT_TRUE(fits.status.ok()) << fits.status;
}

// 10,000 mixed requests of random sizes, from several threads at once: device memory in use must come
// back to where it was, by the pool's own counter and by the driver's.
TEST(CudaBackend, MemoryStaysFlatOverTenThousandMixedRequests) {
  SKIP_WITHOUT_GPU();
  auto reading = [](const char* kind) {
    for (const Backend::MemoryReading& m : Cuda()->memory())
      if (m.kind == kind) return m.bytes;
    return -1.0;
  };
  auto run_mixed = [](int thread, int requests) {
    std::mt19937_64 rng(thread);
    for (int i = 0; i < requests; ++i) {
      const std::size_t n = std::size_t{1} << (rng() % 21);  // 1 .. 1M keys
      const std::size_t size = n + rng() % n;
      if (rng() % 3 == 0) {
        TopKSpec spec;
        spec.dtype = DType::kFloat32;
        spec.k = 1 + rng() % std::min<std::size_t>(size, 100);
        spec.algorithm = Algorithm::kRadix;
        TopKResultBytes out = RunTopK(*Cuda(), spec, Bytes(MakeInput<float>(Pattern::kRandom, size, i)));
        ASSERT_TRUE(out.status.ok()) << out.status;
      } else {
        SortSpec spec;
        spec.dtype = rng() % 2 ? DType::kUInt64 : DType::kInt32;
        spec.payload = rng() % 2 ? SortPayload::kIndices : SortPayload::kNone;
        spec.algorithm = Algorithm::kRadix;
        const auto keys = spec.dtype == DType::kUInt64 ? Bytes(MakeInput<uint64_t>(Pattern::kRandom, size, i))
                                                       : Bytes(MakeInput<int32_t>(Pattern::kRandom, size, i));
        SortOutput out = RunSort(*Cuda(), spec, keys, {});
        ASSERT_TRUE(out.status.ok()) << out.status;
      }
    }
  };
  run_mixed(100, 50);  // warm the pool
  const double pool_used_before = reading("pool_used"), device_used_before = reading("device_used");
  constexpr int kThreads = 4, kRequests = 10000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(run_mixed, t, kRequests / kThreads);
  for (auto& t : threads) t.join();
  const double pool_used_after = reading("pool_used"), device_used_after = reading("device_used");
  const double reserved = reading("pool_reserved");
  std::printf("device memory over %d requests: pool used %.0f -> %.0f bytes, pool reserved %.0f, "
              "device used (cudaMemGetInfo) %.0f -> %.0f bytes\n",
              kRequests, pool_used_before, pool_used_after, reserved, device_used_before, device_used_after);
  RecordProperty("pool_used_after", std::to_string(pool_used_after));
  RecordProperty("device_used_delta", std::to_string(device_used_after - device_used_before));
  EXPECT_EQ(pool_used_after, pool_used_before);
  // The pool may keep more cached memory after larger concurrent peaks; it must stay bounded by that cache.
  EXPECT_LE(device_used_after - device_used_before, reserved);
}

}  // namespace
}  // namespace gpusort
