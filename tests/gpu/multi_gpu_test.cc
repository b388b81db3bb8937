// The set of GPUs over real CUDA engines (issue 19): arrays split across two GPUs and merged on the host,
// and arrays sorted in runs on one GPU whose memory limit (--cuda-memory-limit-bytes) is set small so
// that sizes a test can check exercise the out-of-core path; against the CPU engine, bit for bit, for
// every dtype, order and payload, at sizes around the split points; top-k likewise; requests from
// registered (shared) memory; a device region on the second GPU served there. The split tests skip
// without two GPUs, the rest without one. tests/cpu/gpu_set_test.cc checks the same set over stand-ins
// everywhere; multi_gpu_fault_test.cc loses one GPU of two.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/shared_device_memory.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/backend/cuda_backend.h"
#include "tests/support/inputs.h"
#include "tests/support/stages.h"

namespace gpusort::testing {
namespace {

int GpuCount() {
  std::string why;
  return kernels::CountDevices(&why);
}

#define SKIP_WITHOUT_GPUS(n)                                                          \
  do {                                                                                \
    if (GpuCount() < (n)) GTEST_SKIP() << "needs " << (n) << " GPUs, has " << GpuCount(); \
  } while (0)

constexpr std::size_t kSplitFrom = std::size_t{1} << 16;
constexpr std::size_t kSmallMemory = std::size_t{8} << 20;  // runs of a few hundred thousand keys

// Two GPUs splitting from kSplitFrom keys; two GPUs with little memory each; one GPU with little memory.
Backend* SplitPair() {
  static std::unique_ptr<Backend> b = [] {
    auto made = MakeCudaBackend({.devices = {0, 1}, .split_from_keys = kSplitFrom});
    return made.ok() ? std::move(*made) : nullptr;
  }();
  return b.get();
}
Backend* SmallPair() {
  static std::unique_ptr<Backend> b = [] {
    auto made = MakeCudaBackend({.engine = {.memory_limit_bytes = kSmallMemory}, .devices = {0, 1}});
    return made.ok() ? std::move(*made) : nullptr;
  }();
  return b.get();
}
Backend* SmallOne() {
  static std::unique_ptr<Backend> b = [] {
    auto made = MakeCudaBackend({.engine = {.memory_limit_bytes = kSmallMemory}});
    return made.ok() ? std::move(*made) : nullptr;
  }();
  return b.get();
}
Backend* Cpu() {
  static std::unique_ptr<Backend> b = MakeCpuBackend({});
  return b.get();
}

struct SortOutput {
  absl::Status status;
  std::vector<std::byte> keys, values;
  std::vector<int64_t> indices;
  ExecutionReport report;
};

SortOutput SortOn(Backend& backend, const SortSpec& spec, const std::vector<std::byte>& keys,
                  const std::vector<std::byte>& values) {
  SortOutput out;
  const std::size_t n = keys.size() / ElementSize(spec.dtype);
  out.keys = keys;
  out.values.resize(values.size());
  out.indices.resize(spec.payload == SortPayload::kIndices ? n : 0);
  SortBuffers buffers;
  buffers.count = n;
  buffers.keys = out.keys;
  buffers.values = values;
  buffers.values_out = out.values;
  buffers.indices_out = out.indices;
  out.status = RunSort(backend, spec, buffers, Cancellation(), out.report);
  return out;
}

template <typename T>
std::vector<std::byte> BytesOf(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Sorts on `backend` (AUTO's GPU: RADIX by name) and on the CPU engine; expects the same bytes.
template <typename T>
void ExpectSameAsCpu(Backend& backend, SortSpec spec, std::size_t n, Pattern pattern, const std::string& where) {
  const std::vector<std::byte> keys = BytesOf(MakeInput<T>(pattern, n, n + 1));
  const std::vector<std::byte> values = MakeValueBytes(spec.payload == SortPayload::kValues ? n * spec.value_width : 0);
  spec.algorithm = Algorithm::kRadix;
  const SortOutput gpu = SortOn(backend, spec, keys, values);
  spec.algorithm = Algorithm::kAuto;
  const SortOutput cpu = SortOn(*Cpu(), spec, keys, values);
  const std::string what = where + " n=" + std::to_string(n) + " " + PatternName(pattern);
  ASSERT_TRUE(gpu.status.ok()) << what << ": " << gpu.status;
  ASSERT_TRUE(cpu.status.ok()) << what << ": " << cpu.status;
  EXPECT_TRUE(gpu.keys == cpu.keys) << what;
  if (spec.stable) {
    EXPECT_TRUE(gpu.indices == cpu.indices) << what;
    EXPECT_TRUE(gpu.values == cpu.values) << what;
  }
}

template <typename T>
class MultiGpuSort : public ::testing::Test {};
using AllKeyTypes = ::testing::Types<int32_t, uint32_t, int64_t, uint64_t, float, double, Float16, BFloat16, int16_t,
                                     uint16_t, int8_t, uint8_t>;
TYPED_TEST_SUITE(MultiGpuSort, AllKeyTypes);

template <typename T>
void SortSweep(Backend& backend, const std::vector<std::size_t>& sizes, const std::string& where) {
  for (const SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
    for (const SortPayload payload : {SortPayload::kNone, SortPayload::kIndices, SortPayload::kValues}) {
      SortSpec spec;
      spec.dtype = DTypeOf<T>::value;
      spec.order = order;
      spec.stable = payload != SortPayload::kNone;
      spec.payload = payload;
      spec.value_width = payload == SortPayload::kValues ? 4 : 0;
      const std::string how = where + (order == SortOrder::kDescending ? " desc" : " asc") + " payload " +
                              std::to_string(static_cast<int>(payload));
      for (const std::size_t n : sizes) ExpectSameAsCpu<T>(backend, spec, n, Pattern::kRandom, how);
      ExpectSameAsCpu<T>(backend, spec, sizes.back(), Pattern::kSpecials, how);
      ExpectSameAsCpu<T>(backend, spec, sizes.back(), Pattern::kFewDistinct, how);
    }
  }
}

TYPED_TEST(MultiGpuSort, SplitAcrossTwoGpusAroundTheSplitPoint) {
  SKIP_WITHOUT_GPUS(2);
  ASSERT_NE(SplitPair(), nullptr);
  SortSweep<TypeParam>(*SplitPair(), {kSplitFrom - 1, kSplitFrom, kSplitFrom + 1, (std::size_t{1} << 20) + 3},
                       "two GPUs");
}

TYPED_TEST(MultiGpuSort, InRunsOnTwoGpusWithLittleMemory) {
  SKIP_WITHOUT_GPUS(2);
  ASSERT_NE(SmallPair(), nullptr);
  SortSweep<TypeParam>(*SmallPair(), {(std::size_t{3} << 20) + 5}, "two small GPUs");
}

TYPED_TEST(MultiGpuSort, InRunsOnOneGpuWithLittleMemory) {
  SKIP_WITHOUT_GPUS(1);
  ASSERT_NE(SmallOne(), nullptr);
  SortSweep<TypeParam>(*SmallOne(), {(std::size_t{3} << 20) + 5}, "one small GPU");
}

template <typename T>
void ExpectSameTopK(Backend& backend, std::size_t n, std::size_t k, bool largest, const std::string& where) {
  const std::vector<T> keys = MakeInput<T>(Pattern::kFewDistinct, n, 5);
  TopKSpec spec;
  spec.dtype = DTypeOf<T>::value;
  spec.k = k;
  spec.largest = largest;
  std::vector<T> gpu_values(k), cpu_values(k);
  std::vector<int64_t> gpu_indices(k), cpu_indices(k);
  auto run = [&](Backend& b, Algorithm a, std::vector<T>& values, std::vector<int64_t>& indices) {
    spec.algorithm = a;
    TopKBuffers buffers;
    buffers.count = n;
    buffers.keys = std::as_bytes(std::span(keys));
    buffers.values_out = std::as_writable_bytes(std::span(values));
    buffers.indices_out = indices;
    ExecutionReport report;
    return RunTopK(b, spec, buffers, Cancellation(), report);
  };
  const std::string what = where + " k=" + std::to_string(k) + (largest ? " largest" : " smallest");
  ASSERT_TRUE(backend.CheckTopKLimits(spec, n).ok()) << what;
  const absl::Status g = run(backend, Algorithm::kRadix, gpu_values, gpu_indices);
  ASSERT_TRUE(g.ok()) << what << ": " << g;
  ASSERT_TRUE(run(*Cpu(), Algorithm::kAuto, cpu_values, cpu_indices).ok());
  EXPECT_TRUE(BytesOf(gpu_values) == BytesOf(cpu_values)) << what;
  EXPECT_EQ(gpu_indices, cpu_indices) << what;
}

TYPED_TEST(MultiGpuSort, TopKSplitAndInRuns) {
  SKIP_WITHOUT_GPUS(2);
  for (const bool largest : {true, false}) {
    for (const std::size_t k : {std::size_t{1}, std::size_t{100}, std::size_t{5000}}) {
      ExpectSameTopK<TypeParam>(*SplitPair(), std::size_t{1} << 20, k, largest, "two GPUs");
      ExpectSameTopK<TypeParam>(*SmallPair(), (std::size_t{3} << 20) + 5, k, largest, "two small GPUs");
    }
  }
}

TEST(MultiGpu, RegisteredMemorySortsInRunsAcrossBothGpus) {
  SKIP_WITHOUT_GPUS(2);
  const std::size_t n = (std::size_t{4} << 20) + 1;
  std::vector<uint32_t> input = MakeInput<uint32_t>(Pattern::kRandom, n, 3);
  std::vector<uint32_t> output(n);
  auto pin_in = SmallPair()->PinHostMemory(std::as_writable_bytes(std::span(input)));
  auto pin_out = SmallPair()->PinHostMemory(std::as_writable_bytes(std::span(output)));
  ASSERT_TRUE(pin_in.ok() && pin_out.ok());
  SortSpec spec;
  spec.algorithm = Algorithm::kRadix;
  SortBuffers buffers;
  buffers.count = n;
  buffers.keys = std::as_writable_bytes(std::span(output));
  ExecutionReport report;
  const absl::Status status = RunSort(*SmallPair(), spec, buffers, Cancellation(), report, Memory::kRegisteredHost, std::as_bytes(std::span(input)));
  ASSERT_TRUE(status.ok()) << status;
  std::vector<uint32_t> want = input;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(output, want);
  EXPECT_NE(report.device.find("cuda:0"), std::string::npos) << report.device;
  EXPECT_NE(report.device.find("cuda:1"), std::string::npos) << report.device;
}

// Keys alone split across the GPUs are sorted in runs kept on both and merged there, each GPU making
// half of the answer from both GPUs' runs (peer copies); SplitAcrossTwoGpusAroundTheSplitPoint checks
// every dtype and order the same way.
TEST(MultiGpu, KeysAloneSplitAcrossBothGpusMergeOnTheDevices) {
  SKIP_WITHOUT_GPUS(2);
  for (const Pattern pattern : kAllPatterns) {
    const std::size_t n = (std::size_t{1} << 20) + 3;
    std::vector<double> keys = MakeInput<double>(pattern, n, 21);
    SortSpec spec;
    spec.dtype = DType::kFloat64;
    spec.order = SortOrder::kDescending;
    spec.algorithm = Algorithm::kRadix;
    const SortOutput gpu = SortOn(*SplitPair(), spec, BytesOf(keys), {});
    spec.algorithm = Algorithm::kAuto;
    const SortOutput cpu = SortOn(*Cpu(), spec, BytesOf(keys), {});
    ASSERT_TRUE(gpu.status.ok()) << gpu.status;
    EXPECT_TRUE(gpu.keys == cpu.keys) << PatternName(pattern);
    EXPECT_TRUE(HasStage(gpu.report, Stage::kDeviceMerge)) << PatternName(pattern);
    EXPECT_NE(gpu.report.device.find("cuda:0"), std::string::npos) << gpu.report.device;
    EXPECT_NE(gpu.report.device.find("cuda:1"), std::string::npos) << gpu.report.device;
  }
}

// More keys than both GPUs' memory holds, with indices: runs kept on the host, each GPU its share of
// them and of the blocks (issue 44), exact and stable.
TEST(MultiGpu, MoreThanBothGpusHoldMergeOnTheDevicesWithRunsOnTheHost) {
  SKIP_WITHOUT_GPUS(2);
  ASSERT_NE(SmallPair(), nullptr);
  for (const Pattern pattern : {Pattern::kRandom, Pattern::kFewDistinct, Pattern::kSpecials}) {
    const std::size_t n = 4 * kSmallMemory / sizeof(float) + 7;  // 16 bytes a key and more: twice both GPUs
    std::vector<float> keys = MakeInput<float>(pattern, n, 23);
    SortSpec spec;
    spec.dtype = DType::kFloat32;
    spec.payload = SortPayload::kIndices;
    spec.stable = true;
    spec.algorithm = Algorithm::kRadix;
    const SortOutput gpu = SortOn(*SmallPair(), spec, BytesOf(keys), {});
    spec.algorithm = Algorithm::kAuto;
    const SortOutput cpu = SortOn(*Cpu(), spec, BytesOf(keys), {});
    ASSERT_TRUE(gpu.status.ok()) << gpu.status;
    EXPECT_TRUE(gpu.keys == cpu.keys) << PatternName(pattern);
    EXPECT_EQ(gpu.indices, cpu.indices) << PatternName(pattern);
    EXPECT_TRUE(HasStage(gpu.report, Stage::kDeviceMerge)) << PatternName(pattern);
    EXPECT_NE(gpu.report.device.find("cuda:1"), std::string::npos) << gpu.report.device;
  }
}

TEST(MultiGpu, DeviceRegionOnTheSecondGpuIsServedThere) {
  SKIP_WITHOUT_GPUS(2);
  const std::size_t n = std::size_t{1} << 20;
  kernels::ExportableDeviceMemory memory;
  ASSERT_TRUE(kernels::ExportableDeviceMemory::Allocate(n * 4, 1, &memory).ok());
  int fd = -1;
  ASSERT_TRUE(memory.ExportFd(&fd).ok());
  auto import = SplitPair()->ImportDeviceMemory(fd, n * 4);
  close(fd);
  ASSERT_TRUE(import.ok()) << import.status();
  std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, n, 4);
  kernels::Stream stream;
  ASSERT_TRUE(kernels::UseDevice(1).ok());
  ASSERT_TRUE(kernels::Stream::Create(&stream).ok());
  ASSERT_TRUE(kernels::CopyAnyAsync((*import)->bytes().data(), keys.data(), n * 4, stream).ok());
  ASSERT_TRUE(stream.Synchronize().ok());
  SortSpec spec;
  SortBuffers buffers;
  buffers.count = n;
  buffers.keys = (*import)->bytes();
  ExecutionReport report;
  const absl::Status status = RunSort(*SplitPair(), spec, buffers, Cancellation(), report, Memory::kDeviceRegion, (*import)->bytes());
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(report.device.rfind("cuda:1 ", 0), 0u) << report.device;
  std::vector<uint32_t> got(n);
  ASSERT_TRUE(kernels::CopyAnyAsync(got.data(), (*import)->bytes().data(), n * 4, stream).ok());
  ASSERT_TRUE(stream.Synchronize().ok());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(got, keys);
}

TEST(MultiGpu, EveryGpuIsListedServingAndItsMemoryRead) {
  SKIP_WITHOUT_GPUS(2);
  const std::vector<Backend::DeviceServing> devices = SplitPair()->devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].device, "cuda:0");
  EXPECT_EQ(devices[1].device, "cuda:1");
  for (const auto& d : devices) EXPECT_TRUE(d.status.ok()) << d.device;
  double total0 = 0, total1 = 0;
  for (const Backend::MemoryReading& m : SplitPair()->memory()) {
    if (m.kind == "device_total") (m.device == "cuda:0" ? total0 : total1) = m.bytes;
  }
  EXPECT_GT(total0, 0);
  EXPECT_GT(total1, 0);
}

// wait_pollers 0 (the default) lets one thread a GPU served poll its events; a number is kept.
TEST(MultiGpu, EventPollersDefaultToOneForEachGpuServed) {
  SKIP_WITHOUT_GPUS(2);
  for (const std::vector<int>& devices : {std::vector<int>{0}, std::vector<int>{0, 1}}) {
    ASSERT_TRUE(MakeCudaBackend({.devices = devices}).ok());
    EXPECT_EQ(kernels::MostEventPollers(), devices.size());
  }
  ASSERT_TRUE(MakeCudaBackend({.devices = {0, 1}, .wait_pollers = 5}).ok());
  EXPECT_EQ(kernels::MostEventPollers(), 5u);
  kernels::SetMostEventPollers(0);
}

TEST(MultiGpu, CudaDevicesFlagValues) {
  EXPECT_EQ(*ParseCudaDevices("0,1"), (std::vector<int>{0, 1}));
  EXPECT_EQ(*ParseCudaDevices("3"), (std::vector<int>{3}));
  for (const char* bad : {"", "0,", ",1", "0,0", "x", "-1", "1,2,a", "256"}) {
    EXPECT_EQ(ParseCudaDevices(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  if (GpuCount() > 0) {
    EXPECT_EQ(ParseCudaDevices("all")->size(), static_cast<std::size_t>(GpuCount()));
  }
}

}  // namespace
}  // namespace gpusort::testing
