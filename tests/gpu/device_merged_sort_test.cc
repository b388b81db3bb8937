// Keys alone too many for one pass on a GPU that still holds them all, sorted in runs kept on the GPU and
// merged there (server/backend/cuda/device_merged_sort.h, issue 19). A device memory limit
// (--cuda-memory-limit-bytes) of 8 MiB makes a pass take about half a million keys, so arrays of a
// million keys exercise runs, splits and blocks at sizes a test can check: every dtype and order,
// against the CPU engine bit for bit, on every input pattern; sizes just off the run and block sizes;
// registered memory in and out; values payloads declining to the host merge; cancellation. Arrays three
// and more times what the memory holds sort with their runs kept on the host (issue 44), checked the
// same way; indices too, in both ways (equal keys in the order of their indices, as the CPU engine's).
// Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "server/backend/cuda_backend.h"
#include "tests/gpu/backends.h"
#include "tests/support/inputs.h"
#include "tests/support/stages.h"

namespace gpusort::testing {
namespace {

constexpr std::size_t kSmallMemory = std::size_t{8} << 20;

Backend* SmallGpu() {
  static std::unique_ptr<Backend> b = [] {
    auto made = MakeCudaBackend({.engine = {.memory_limit_bytes = kSmallMemory}});
    return made.ok() ? std::move(*made) : nullptr;
  }();
  return b.get();
}

struct Sorted {
  absl::Status status;
  std::vector<std::byte> keys;
  std::vector<int64_t> indices;
  ExecutionReport report;
};

// The CPU engine takes AUTO only: the reference sorts with it.
Sorted SortOn(Backend& backend, SortSpec spec, std::vector<std::byte> keys) {
  if (&backend == Cpu()) spec.algorithm = Algorithm::kAuto;
  Sorted out;
  out.keys = std::move(keys);
  const std::size_t n = out.keys.size() / ElementSize(spec.dtype);
  out.indices.resize(spec.payload == SortPayload::kIndices ? n : 0);
  SortBuffers buffers;
  buffers.count = n;
  buffers.keys = out.keys;
  buffers.indices_out = out.indices;
  out.status = RunSort(backend, spec, buffers, Cancellation(), out.report);
  return out;
}

// Keys whose device width (32 bits for keys of 32 bits or fewer, else 64) fills half the memory limit:
// more than one pass takes, and they all fit with the merge's buffers.
template <typename T>
std::size_t MergedOnDeviceSize() {
  return kSmallMemory / 2 / std::max<std::size_t>(sizeof(T), 4) - 3;
}

template <typename T>
void ExpectMergedOnDevice(SortSpec spec, std::size_t n, Pattern pattern, const std::string& where) {
  const std::vector<std::byte> keys = Bytes(MakeInput<T>(pattern, n, n + 7));
  spec.algorithm = Algorithm::kRadix;  // the GPU by name; AUTO's router may choose either engine
  const Sorted gpu = SortOn(*SmallGpu(), spec, keys);
  const Sorted cpu = SortOn(*Cpu(), spec, keys);
  const std::string what = where + " n=" + std::to_string(n) + " " + PatternName(pattern);
  ASSERT_TRUE(gpu.status.ok()) << what << ": " << gpu.status;
  ASSERT_TRUE(cpu.status.ok()) << what << ": " << cpu.status;
  EXPECT_TRUE(gpu.keys == cpu.keys) << what;
  EXPECT_TRUE(gpu.indices == cpu.indices) << what << ": indices";
  EXPECT_TRUE(HasStage(gpu.report, Stage::kDeviceMerge)) << what << ": not merged on the device";
  EXPECT_FALSE(HasStage(gpu.report, Stage::kMerge)) << what;
}

template <typename T>
class DeviceMergedSort : public ::testing::Test {};
using AllKeyTypes = ::testing::Types<int32_t, uint32_t, int64_t, uint64_t, float, double, Float16, BFloat16, int16_t,
                                     uint16_t, int8_t, uint8_t>;
TYPED_TEST_SUITE(DeviceMergedSort, AllKeyTypes);

TYPED_TEST(DeviceMergedSort, EveryPatternAndOrderAgreesWithTheCpu) {
  SKIP_WITHOUT_GPU();
  ASSERT_NE(SmallGpu(), nullptr);
  const std::size_t n = MergedOnDeviceSize<TypeParam>();
  for (const SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
    SortSpec spec;
    spec.dtype = DTypeOf<TypeParam>::value;
    spec.order = order;
    for (const Pattern pattern : kAllPatterns) {
      ExpectMergedOnDevice<TypeParam>(spec, n, pattern, order == SortOrder::kAscending ? "asc" : "desc");
    }
  }
}

TYPED_TEST(DeviceMergedSort, SizesAroundOnePass) {
  SKIP_WITHOUT_GPU();
  ASSERT_NE(SmallGpu(), nullptr);
  SortSpec spec;
  spec.dtype = DTypeOf<TypeParam>::value;
  // One pass takes 3/4 of the memory over 3 device words a key (sort_in_runs.cc's SortRunKeys): just
  // under half of MergedOnDeviceSize.
  const std::size_t half = MergedOnDeviceSize<TypeParam>() / 2;
  for (const std::size_t n : {half + 3, half + 17, 3 * half / 2 + 1, 2 * half - 1}) {
    ExpectMergedOnDevice<TypeParam>(spec, n, Pattern::kRandom, "asc");
  }
}

// More keys than the GPU's memory holds (three times half of it and more): runs kept on the host.
template <typename T>
std::size_t MoreThanTheMemoryHolds() {
  return 3 * MergedOnDeviceSize<T>() + 5;
}

TYPED_TEST(DeviceMergedSort, MoreKeysThanTheMemoryHoldsSortWithRunsOnTheHost) {
  SKIP_WITHOUT_GPU();
  ASSERT_NE(SmallGpu(), nullptr);
  const std::size_t n = MoreThanTheMemoryHolds<TypeParam>();
  for (const SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
    SortSpec spec;
    spec.dtype = DTypeOf<TypeParam>::value;
    spec.order = order;
    for (const Pattern pattern : kAllPatterns) {
      ExpectMergedOnDevice<TypeParam>(spec, n, pattern, order == SortOrder::kAscending ? "host runs asc" : "host runs desc");
    }
  }
  SortSpec spec;
  spec.dtype = DTypeOf<TypeParam>::value;
  for (const std::size_t more : {std::size_t{2} * n - 1, std::size_t{2} * n + 1}) {
    ExpectMergedOnDevice<TypeParam>(spec, more, Pattern::kRandom, "host runs asc");
  }
}

// Indices: runs kept on the GPU (a third of MergedOnDeviceSize: more than one pass, and the keys with
// their positions fit) and on the host, on the patterns with the most ties.
TYPED_TEST(DeviceMergedSort, IndicesInTheOrderOfEqualKeysAsTheCpuGivesThem) {
  SKIP_WITHOUT_GPU();
  ASSERT_NE(SmallGpu(), nullptr);
  for (const std::size_t n : {MergedOnDeviceSize<TypeParam>() / 3, MoreThanTheMemoryHolds<TypeParam>()}) {
    for (const SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
      SortSpec spec;
      spec.dtype = DTypeOf<TypeParam>::value;
      spec.order = order;
      spec.payload = SortPayload::kIndices;
      spec.stable = true;
      for (const Pattern pattern : {Pattern::kRandom, Pattern::kAllEqual, Pattern::kFewDistinct, Pattern::kSpecials,
                                    Pattern::kReversed}) {
        ExpectMergedOnDevice<TypeParam>(spec, n, pattern, order == SortOrder::kAscending ? "indices asc" : "indices desc");
      }
    }
  }
}

TEST(DeviceMergedSortLimits, RunsOnTheHostInPlaceInRegisteredMemory) {
  SKIP_WITHOUT_GPU();
  ASSERT_NE(SmallGpu(), nullptr);
  const std::size_t n = MoreThanTheMemoryHolds<double>();
  std::vector<double> keys = MakeInput<double>(Pattern::kSpecials, n, 21);
  const std::vector<std::byte> before = Bytes(keys);
  auto pin = SmallGpu()->PinHostMemory(std::as_writable_bytes(std::span(keys)));
  ASSERT_TRUE(pin.ok()) << pin.status();
  SortSpec spec;
  spec.dtype = DType::kFloat64;
  spec.algorithm = Algorithm::kRadix;
  SortBuffers buffers;
  buffers.count = n;
  buffers.keys = std::as_writable_bytes(std::span(keys));
  ExecutionReport report;
  const absl::Status status = RunSort(*SmallGpu(), spec, buffers, Cancellation(), report, Memory::kRegisteredHost,
                                      std::as_bytes(std::span(keys)));
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(HasStage(report, Stage::kDeviceMerge));
  const Sorted cpu = SortOn(*Cpu(), spec, before);
  EXPECT_TRUE(Bytes(keys) == cpu.keys);
}

TEST(DeviceMergedSortLimits, ValuesMergeOnTheHost) {
  SKIP_WITHOUT_GPU();
  ASSERT_NE(SmallGpu(), nullptr);
  SortSpec spec;
  spec.dtype = DType::kUInt32;
  spec.payload = SortPayload::kValues;
  spec.value_width = 4;
  spec.stable = true;
  spec.algorithm = Algorithm::kRadix;
  const std::size_t n = MergedOnDeviceSize<uint32_t>() / 2;
  std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kFewDistinct, n, 11);
  std::vector<uint32_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<uint32_t>(i * 2654435761u);
  std::vector<std::pair<uint32_t, uint32_t>> expected;
  for (std::size_t i = 0; i < n; ++i) expected.emplace_back(keys[i], values[i]);
  std::stable_sort(expected.begin(), expected.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<uint32_t> values_out(n);
  SortBuffers buffers;
  buffers.count = n;
  buffers.keys = std::as_writable_bytes(std::span(keys));
  buffers.values = std::as_writable_bytes(std::span(values));
  buffers.values_out = std::as_writable_bytes(std::span(values_out));
  ExecutionReport report;
  const absl::Status status = RunSort(*SmallGpu(), spec, buffers, Cancellation(), report);
  ASSERT_TRUE(status.ok()) << status;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(keys[i], expected[i].first) << i;
    ASSERT_EQ(values_out[i], expected[i].second) << i;
  }
  EXPECT_TRUE(HasStage(report, Stage::kMerge));
  EXPECT_FALSE(HasStage(report, Stage::kDeviceMerge));
}

TEST(DeviceMergedSortLimits, RegisteredMemoryInAndOut) {
  SKIP_WITHOUT_GPU();
  ASSERT_NE(SmallGpu(), nullptr);
  const std::size_t n = MergedOnDeviceSize<float>();
  std::vector<float> input = MakeInput<float>(Pattern::kSpecials, n, 5);
  std::vector<float> output(n, 0.0f);
  auto pin_in = SmallGpu()->PinHostMemory(std::as_writable_bytes(std::span(input)));
  auto pin_out = SmallGpu()->PinHostMemory(std::as_writable_bytes(std::span(output)));
  ASSERT_TRUE(pin_in.ok() && pin_out.ok());
  SortSpec spec;
  spec.dtype = DType::kFloat32;
  spec.order = SortOrder::kDescending;
  spec.algorithm = Algorithm::kRadix;
  SortBuffers buffers;
  buffers.count = n;
  buffers.keys = std::as_writable_bytes(std::span(output));
  ExecutionReport report;
  const std::vector<float> before = input;
  const absl::Status status =
      RunSort(*SmallGpu(), spec, buffers, Cancellation(), report, Memory::kRegisteredHost, std::as_bytes(std::span(input)));
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(HasStage(report, Stage::kDeviceMerge));
  EXPECT_TRUE(Bytes(input) == Bytes(before)) << "the input was written";
  const Sorted cpu = SortOn(*Cpu(), spec, Bytes(input));
  EXPECT_TRUE(Bytes(output) == cpu.keys);
}

// Runs kept on the GPU, and on the host.
TEST(DeviceMergedSortLimits, ACancelledRequestStops) {
  SKIP_WITHOUT_GPU();
  ASSERT_NE(SmallGpu(), nullptr);
  for (const std::size_t n : {MergedOnDeviceSize<uint32_t>(), MoreThanTheMemoryHolds<uint32_t>()}) {
    std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, n, 9);
    SortSpec spec;
    spec.algorithm = Algorithm::kRadix;
    SortBuffers buffers;
    buffers.count = n;
    buffers.keys = std::as_writable_bytes(std::span(keys));
    Cancellation cancellation;
    cancellation.Cancel();
    ExecutionReport report;
    EXPECT_EQ(RunSort(*SmallGpu(), spec, buffers, cancellation, report).code(), absl::StatusCode::kCancelled) << n;
    // The engine serves the next request.
    const Sorted after = SortOn(*SmallGpu(), spec, Bytes(keys));
    ASSERT_TRUE(after.status.ok()) << after.status;
    std::sort(keys.begin(), keys.end());
    EXPECT_TRUE(after.keys == Bytes(keys)) << n;
  }
}

}  // namespace
}  // namespace gpusort::testing
