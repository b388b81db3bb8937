// The set of GPUs (server/backend/gpu_set.h) over stand-in GPU engines (tests/support/stand_in_gpu.h),
// which run anywhere: arrays larger than one GPU's "memory" sorted in runs and merged on the host
// (sort_in_runs.h, cpu/run_merge.h), for every dtype, order, payload and input pattern, against the
// references of tests/support; top-k in runs; placement by load and by a device region's home; and a
// GPU lost mid-request, after which the set serves on from the others. tests/gpu/multi_gpu_test.cc runs
// the same set over real CUDA engines on a machine with two GPUs.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "server/backend/auto_router.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/backend/cpu/run_merge.h"
#include "server/backend/gpu_set.h"
#include "server/backend/sort_in_runs.h"
#include "server/core/dtype.h"
#include "server/core/status_macros.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"
#include "tests/support/stages.h"
#include "tests/support/stand_in_gpu.h"

namespace gpusort::testing {
namespace {

constexpr std::size_t kRunBytes = 12000;  // each stand-in GPU's "memory": runs of a few hundred keys

// A stand-in for the CUDA backend's merge on the GPUs (gpu_set.h, MergeOnDevices): while `takes` is set,
// sorts keys alone on the CPU and names the GPUs it was given, as the real one would with the memory.
struct StandInMerge {
  std::atomic<bool> takes{false};
  std::atomic<int> calls{0};
  std::atomic<std::size_t> gpus{0};  // how many GPUs the last call was given
  std::unique_ptr<Backend> cpu = MakeCpuBackend({});
};

MergeOnDevices MergeOf(std::shared_ptr<StandInMerge> merge) {
  return [merge](std::span<const int> ordinals, const SortWork& work, std::size_t, const Cancellation& cancellation,
                 ExecutionReport& report) -> absl::StatusOr<bool> {
    if (!merge->takes || work.spec.payload != SortPayload::kNone) return false;
    ++merge->calls;
    merge->gpus = ordinals.size();
    SortSpec spec = work.spec;
    spec.algorithm = Algorithm::kAuto;
    RETURN_IF_ERROR(RunSort(*merge->cpu, spec, work.buffers, cancellation, report, Memory::kRegisteredHost,
                            work.keys_in));
    report.AddStage(Stage::kDeviceMerge, 0);
    report.device.clear();
    for (const int ordinal : ordinals) {
      report.device += (report.device.empty() ? "cuda:" : ", cuda:") + std::to_string(ordinal) + " stand-in";
    }
    return true;
  };
}

struct Set {
  std::unique_ptr<Backend> backend;
  std::vector<std::shared_ptr<StandInGpu::State>> gpus;
  std::shared_ptr<StandInMerge> merge = std::make_shared<StandInMerge>();
};

// `gpus` stand-ins, each taking at most `max_keys` keys per call, with `memory` bytes each (0: runs only
// past the GPU paths' 2^31 keys), and the stand-in merge on the GPUs (declining until told).
Set MakeSet(int gpus, std::size_t max_keys, GpuSetOptions options = {}, std::size_t memory = kRunBytes) {
  Set set;
  std::vector<GpuSetMember> members;
  for (int g = 0; g < gpus; ++g) {
    auto engine = std::make_unique<StandInGpu>(g, max_keys);
    set.gpus.push_back(engine->state());
    members.push_back({.ordinal = g, .engine = std::move(engine), .memory_bytes = memory});
  }
  options.merge_on_devices = MergeOf(set.merge);
  set.backend = MakeGpuSet(std::move(members), std::move(options));
  return set;
}

// What a GPU sort of these keys needs at least: the keys and payload twice.
std::size_t MaxKeysOf(const SortSpec& spec) {
  const std::size_t payload = spec.payload == SortPayload::kValues    ? spec.value_width
                              : spec.payload == SortPayload::kIndices ? 8
                                                                      : 0;
  return kRunBytes / (2 * (ElementSize(spec.dtype) + payload));
}

template <typename T>
class GpuSetSort : public ::testing::Test {};
using AllKeyTypes = ::testing::Types<int32_t, uint32_t, int64_t, uint64_t, float, double, Float16, BFloat16, int16_t,
                                     uint16_t, int8_t, uint8_t>;
TYPED_TEST_SUITE(GpuSetSort, AllKeyTypes);

// Sorts `keys` through `set` with `spec` (values of `value_width` bytes follow the keys when asked) and
// checks keys, indices and values against the stable reference.
template <typename T>
void ExpectSortedInRuns(Backend& set, SortSpec spec, const std::vector<T>& keys, const std::string& what) {
  const std::size_t n = keys.size();
  std::vector<T> got = keys;
  std::vector<int64_t> indices(spec.payload == SortPayload::kIndices ? n : 0);
  const std::vector<std::byte> values = MakeValueBytes(spec.payload == SortPayload::kValues ? n * spec.value_width : 0);
  std::vector<std::byte> values_out(values.size());
  SortBuffers buffers;
  buffers.count = n;
  buffers.keys = std::as_writable_bytes(std::span(got));
  buffers.indices_out = indices;
  buffers.values = values;
  buffers.values_out = values_out;
  ExecutionReport report;
  const absl::Status status = RunSort(set, spec, buffers, Cancellation(), report);
  ASSERT_TRUE(status.ok()) << what << ": " << status;
  ASSERT_TRUE(SameBits(got, ReferenceSort(keys, spec.order))) << what;
  const std::vector<int64_t> order = ReferenceStableArgsort(keys, spec.order);
  if (spec.payload == SortPayload::kIndices) {
    EXPECT_EQ(indices, order) << what;
  }
  if (spec.payload == SortPayload::kValues) {
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(0, std::memcmp(&values_out[i * spec.value_width], &values[order[i] * spec.value_width],
                               spec.value_width))
          << what << ": value " << i;
    }
  }
}

TYPED_TEST(GpuSetSort, ArraysLargerThanOneGpuAreSortedInRunsExactlyAsOneSortWould) {
  using T = TypeParam;
  for (const SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
    for (const SortPayload payload : {SortPayload::kNone, SortPayload::kIndices, SortPayload::kValues}) {
      SortSpec spec;
      spec.dtype = DTypeOf<T>::value;
      spec.order = order;
      spec.stable = payload != SortPayload::kNone;
      spec.payload = payload;
      spec.value_width = payload == SortPayload::kValues ? 3 : 0;
      Set set = MakeSet(2, MaxKeysOf(spec));
      const std::size_t run = SortRunKeys(spec, kRunBytes, std::size_t{1} << 31);
      ASSERT_LE(run, MaxKeysOf(spec));
      for (const std::size_t n : {std::size_t{0}, std::size_t{1}, run - 1, run, run + 1, 2 * run + 1, 7 * run + 13}) {
        for (const Pattern pattern : kAllPatterns) {
          if (n < 2 * run && pattern != Pattern::kRandom && pattern != Pattern::kFewDistinct) continue;
          const std::string what = "n=" + std::to_string(n) + " run=" + std::to_string(run) + " " + PatternName(pattern) +
                                   (order == SortOrder::kDescending ? " desc" : " asc") + " payload " +
                                   std::to_string(static_cast<int>(payload));
          ExpectSortedInRuns(*set.backend, spec, MakeInput<T>(pattern, n, n + 3), what);
        }
      }
      // Every call fitted its GPU: the stand-ins refuse more, and the answers above were right.
      for (const auto& gpu : set.gpus) EXPECT_LE(gpu->largest.load(), MaxKeysOf(spec));
      EXPECT_GT(set.gpus[0]->calls.load(), 0);
      EXPECT_GT(set.gpus[1]->calls.load(), 0) << "both GPUs take runs";
    }
  }
}

TEST(GpuSet, SplitFromKeysSpreadsAnArrayThatFitsOneGpuOverEveryGpuAndSaysWhichServed) {
  SortSpec spec;
  spec.payload = SortPayload::kIndices;
  spec.stable = true;
  Set set = MakeSet(3, 1 << 20, {.split_from_keys = 1000}, 0);
  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kFewDistinct, 3001, 5);
  ExpectSortedInRuns(*set.backend, spec, keys, "split over 3");
  for (const auto& gpu : set.gpus) EXPECT_EQ(gpu->calls.load(), 1);
  // Below the threshold: one GPU.
  ExpectSortedInRuns(*set.backend, spec, MakeInput<uint32_t>(Pattern::kRandom, 999, 6), "whole");
  int calls = 0;
  for (const auto& gpu : set.gpus) calls += gpu->calls.load();
  EXPECT_EQ(calls, 4);
}

TEST(GpuSet, ReportNamesEveryGpuThatServedARunAndTheMergeStage) {
  SortSpec spec;
  Set set = MakeSet(2, 1 << 20, {.split_from_keys = 10}, 0);
  std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 100, 1);
  SortBuffers buffers;
  buffers.count = keys.size();
  buffers.keys = std::as_writable_bytes(std::span(keys));
  ExecutionReport report;
  ASSERT_TRUE(RunSort(*set.backend, spec, buffers, Cancellation(), report).ok());
  EXPECT_EQ(report.device, "cuda:0 stand-in, cuda:1 stand-in");
  EXPECT_TRUE(HasStage(report, Stage::kMerge));
}

// Keys alone go first to the merge on the devices, with every serving GPU; payloads, and arrays that
// merge declines, are merged on the host.
TEST(GpuSet, KeysAloneAreMergedOnTheDevicesWithEveryServingGpu) {
  Set set = MakeSet(2, 1000);
  set.merge->takes = true;
  std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 2500, 3);
  std::vector<uint32_t> want = keys;
  std::sort(want.begin(), want.end());
  SortSpec spec;
  SortBuffers buffers;
  buffers.count = keys.size();
  buffers.keys = std::as_writable_bytes(std::span(keys));
  ExecutionReport report;
  ASSERT_TRUE(RunSort(*set.backend, spec, buffers, Cancellation(), report).ok());
  EXPECT_EQ(keys, want);
  EXPECT_TRUE(HasStage(report, Stage::kDeviceMerge));
  EXPECT_FALSE(HasStage(report, Stage::kMerge));
  EXPECT_EQ(set.merge->calls, 1);
  EXPECT_EQ(set.merge->gpus, 2u);
  EXPECT_EQ(report.device, "cuda:0 stand-in, cuda:1 stand-in");
  EXPECT_EQ(set.gpus[0]->calls + set.gpus[1]->calls, 0);  // no run went through an engine

  // One GPU lost: the other merges alone.
  set.gpus[1]->lost = true;
  set.merge->gpus = 0;
  keys = MakeInput<uint32_t>(Pattern::kFewDistinct, 2500, 4);
  want = keys;
  std::sort(want.begin(), want.end());
  buffers.keys = std::as_writable_bytes(std::span(keys));
  report = ExecutionReport{};
  ASSERT_TRUE(RunSort(*set.backend, spec, buffers, Cancellation(), report).ok());
  EXPECT_EQ(keys, want);
  EXPECT_EQ(set.merge->gpus, 1u);
  EXPECT_EQ(report.device, "cuda:0 stand-in");
}

TEST(GpuSet, PayloadsAndDeclinedMergesGoToTheHostMerge) {
  Set set = MakeSet(2, 1000);
  set.merge->takes = true;
  std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kFewDistinct, 2500, 5);
  SortSpec spec;
  spec.payload = SortPayload::kIndices;
  spec.stable = true;
  ExpectSortedInRuns<uint32_t>(*set.backend, spec, keys, "indices");
  EXPECT_EQ(set.merge->calls, 0);

  set.merge->takes = false;  // as GPUs without the memory
  SortSpec keys_only;
  std::vector<uint32_t> got = keys;
  SortBuffers buffers;
  buffers.count = got.size();
  buffers.keys = std::as_writable_bytes(std::span(got));
  ExecutionReport report;
  ASSERT_TRUE(RunSort(*set.backend, keys_only, buffers, Cancellation(), report).ok());
  EXPECT_TRUE(HasStage(report, Stage::kMerge));
  EXPECT_FALSE(HasStage(report, Stage::kDeviceMerge));
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(got, keys);
}

template <typename T>
class GpuSetTopK : public ::testing::Test {};
TYPED_TEST_SUITE(GpuSetTopK, AllKeyTypes);

TYPED_TEST(GpuSetTopK, TopKOfAnArrayLargerThanOneGpuIsEachRunsTopKRankedAgain) {
  using T = TypeParam;
  TopKSpec probe;
  probe.dtype = DTypeOf<T>::value;
  const std::size_t max_keys = kRunBytes / (2 * ElementSize(probe.dtype));
  Set set = MakeSet(2, max_keys);
  for (const Pattern pattern : {Pattern::kRandom, Pattern::kFewDistinct, Pattern::kSpecials, Pattern::kAllEqual}) {
    const std::size_t n = 5 * max_keys + 17;
    const std::vector<T> keys = MakeInput<T>(pattern, n, 9);
    for (const bool largest : {true, false}) {
      for (const std::size_t k : {std::size_t{1}, std::size_t{7}, max_keys / 2, max_keys + 3}) {
        TopKSpec spec = probe;
        spec.k = k;
        spec.largest = largest;
        const std::string what = PatternName(pattern) + " k=" + std::to_string(k) + (largest ? " largest" : " smallest");
        std::vector<T> values(k);
        std::vector<int64_t> indices(k);
        TopKBuffers buffers;
        buffers.count = n;
        buffers.keys = std::as_bytes(std::span(keys));
        buffers.values_out = std::as_writable_bytes(std::span(values));
        buffers.indices_out = indices;
        // A run must hold more than k keys: past what a GPU takes, the set's limits refuse the request
        // (the service checks them before it calls).
        if (k + 1 > max_keys) {
          EXPECT_FALSE(set.backend->CheckTopKLimits(spec, n).ok()) << what;
          continue;
        }
        ASSERT_TRUE(set.backend->CheckTopKLimits(spec, n).ok()) << what;
        ExecutionReport report;
        const absl::Status status = RunTopK(*set.backend, spec, buffers, Cancellation(), report);
        ASSERT_TRUE(status.ok()) << what << ": " << status;
        const TopKAnswer<T> want = ReferenceTopK(keys, 1, k, largest);
        EXPECT_TRUE(SameBits(values, want.values)) << what;
        EXPECT_EQ(indices, want.indices) << what;
      }
    }
  }
  for (const auto& gpu : set.gpus) EXPECT_LE(gpu->largest.load(), max_keys);
}

TEST(GpuSet, SharedMemorySortsReadTheirInputOnceAndWriteTheAnswerWhereAsked) {
  SortSpec spec;
  spec.dtype = DType::kFloat32;
  Set set = MakeSet(2, MaxKeysOf(spec));
  const std::vector<float> input = MakeInput<float>(Pattern::kSpecials, 4000, 2);
  std::vector<float> output(input.size());
  SortBuffers buffers;
  buffers.count = input.size();
  buffers.keys = std::as_writable_bytes(std::span(output));
  ExecutionReport report;
  ASSERT_TRUE(RunSort(*set.backend, spec, buffers, Cancellation(), report, Memory::kRegisteredHost, std::as_bytes(std::span(input))).ok());
  EXPECT_TRUE(SameBits(output, ReferenceSort(input, SortOrder::kAscending)));
}

// A stream's length is unknown when it starts: where the longest request the server takes would not fit
// one GPU, the stream is collected on the host and sorted in runs (through the router, as the server
// calls it), instead of going to one GPU that might run out of memory.
TEST(GpuSet, StreamsThatMayNotFitOneGpuAreCollectedAndSortedInRuns) {
  SortSpec spec;
  spec.algorithm = Algorithm::kRadix;
  Set set = MakeSet(2, MaxKeysOf(spec), {.max_request_bytes = std::size_t{1} << 20});
  Backend* const gpus = set.backend.get();
  EXPECT_EQ(gpus->StartSortIngest(spec), nullptr);
  std::unique_ptr<Backend> router = MakeAutoRouter(MakeCpuBackend({}), std::move(set.backend));
  std::unique_ptr<SortIngest> ingest = router->StartSortIngest(spec);
  ASSERT_NE(ingest, nullptr);
  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 40000, 5);
  for (std::size_t at = 0; at < keys.size(); at += 3000) {
    const std::size_t len = std::min<std::size_t>(3000, keys.size() - at);
    ASSERT_TRUE(ingest->Append(std::as_bytes(std::span(keys).subspan(at, len))).ok());
  }
  ExecutionReport report;
  ASSERT_TRUE(ingest->Sort(Cancellation(), report).ok());
  std::vector<uint32_t> got(keys.size());
  ASSERT_TRUE(ingest->Read(0, keys.size(), reinterpret_cast<std::byte*>(got.data()), nullptr).ok());
  EXPECT_EQ(got, ReferenceSort(keys, SortOrder::kAscending));
  for (const auto& gpu : set.gpus) {
    EXPECT_GT(gpu->calls.load(), 1);
    EXPECT_LE(gpu->largest.load(), MaxKeysOf(spec));
  }
}

TEST(GpuSet, LimitsAllowAWholeArrayOverOneGpuButNotSegmentsOverIt) {
  Set set = MakeSet(2, 1000);
  SortSpec whole;
  EXPECT_TRUE(set.backend->CheckSortLimits(whole, 100000).ok());
  SortSpec rows;
  rows.rows = 2;
  EXPECT_FALSE(set.backend->CheckSortLimits(rows, 100000).ok());
  EXPECT_TRUE(set.backend->CheckSortLimits(rows, 1000).ok());
}

TEST(GpuSet, EachRequestGoesToTheGpuWithTheLeastWorkInFlight) {
  Set set = MakeSet(2, 1 << 20, {}, 0);
  for (const auto& gpu : set.gpus) gpu->Hold();
  SortSpec spec;
  std::vector<uint32_t> big = MakeInput<uint32_t>(Pattern::kRandom, 100000, 1);
  std::vector<uint32_t> small = MakeInput<uint32_t>(Pattern::kRandom, 10, 2);
  auto sort_of = [&](std::vector<uint32_t>& keys) {
    return std::async(std::launch::async, [&] {
      SortBuffers buffers;
      buffers.count = keys.size();
      buffers.keys = std::as_writable_bytes(std::span(keys));
      ExecutionReport report;
      EXPECT_TRUE(RunSort(*set.backend, spec, buffers, Cancellation(), report).ok());
      return report.device;
    });
  };
  auto first = sort_of(big);
  while (set.gpus[0]->calls.load() + set.gpus[1]->calls.load() < 1) std::this_thread::yield();
  const int busy = set.gpus[0]->calls.load() == 1 ? 0 : 1;
  // Three small ones, one after another: each goes to the idle GPU, whose load stays below the big one's.
  for (int i = 0; i < 3; ++i) {
    set.gpus[1 - busy]->Release();
    EXPECT_EQ(sort_of(small).get(), "cuda:" + std::to_string(1 - busy) + " stand-in");
    set.gpus[1 - busy]->Hold();
  }
  set.gpus[busy]->Release();
  EXPECT_EQ(first.get(), "cuda:" + std::to_string(busy) + " stand-in");
}

TEST(GpuSet, AGpuLostMidRequestFailsThatRequestAndTheOthersServeOn) {
  Set set = MakeSet(2, 1 << 20, {.split_from_keys = 100}, 0);
  EXPECT_TRUE(set.backend->Healthy().ok());
  ASSERT_EQ(set.backend->devices().size(), 2u);
  set.gpus[1]->fail_next = true;
  SortSpec spec;
  std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 1000, 3);
  SortBuffers buffers;
  buffers.count = keys.size();
  buffers.keys = std::as_writable_bytes(std::span(keys));
  ExecutionReport report;
  const absl::Status failed = RunSort(*set.backend, spec, buffers, Cancellation(), report);  // split: GPU 1 takes a run
  EXPECT_EQ(failed.code(), absl::StatusCode::kUnavailable) << failed;
  // The set serves on: health OK, GPU 1 named as lost, every later request on GPU 0, in runs or whole.
  EXPECT_TRUE(set.backend->Healthy().ok());
  EXPECT_EQ(set.backend->devices_lost(), 1);
  const std::vector<Backend::DeviceServing> devices = set.backend->devices();
  EXPECT_TRUE(devices[0].status.ok());
  EXPECT_EQ(devices[1].device, "cuda:1");
  EXPECT_FALSE(devices[1].status.ok());
  for (const std::size_t n : {1000, 10}) {
    ExpectSortedInRuns(*set.backend, spec, MakeInput<uint32_t>(Pattern::kRandom, n, n), "after the loss");
  }
  // Both lost: UNAVAILABLE, naming each.
  set.gpus[0]->lost = true;
  const absl::Status none = set.backend->Healthy();
  EXPECT_EQ(none.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(none.message().find("every GPU failed (cuda:0: "), std::string_view::npos) << none;
  EXPECT_NE(none.message().find("cuda:1: "), std::string_view::npos) << none;
}

TEST(GpuSet, ADeviceRegionIsImportedOnItsHomeGpuAndItsRequestsRunThere) {
  Set set = MakeSet(2, 1 << 20, {.home_of_region = [](int fd) -> absl::StatusOr<int> { return fd; }}, 0);
  auto on_1 = set.backend->ImportDeviceMemory(/*fd=*/1, 4096);
  auto on_0 = set.backend->ImportDeviceMemory(/*fd=*/0, 4096);
  ASSERT_TRUE(on_1.ok() && on_0.ok());
  std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 1024, 4);
  std::memcpy((*on_1)->bytes().data(), keys.data(), 4096);
  SortSpec spec;
  SortBuffers buffers;
  buffers.count = keys.size();
  buffers.keys = (*on_1)->bytes();
  ExecutionReport report;
  ASSERT_TRUE(RunSort(*set.backend, spec, buffers, Cancellation(), report, Memory::kDeviceRegion, (*on_1)->bytes()).ok());
  EXPECT_EQ(report.device, "cuda:1 stand-in");
  EXPECT_EQ(set.gpus[1]->calls.load(), 1);
  EXPECT_EQ(set.gpus[0]->calls.load(), 0);
  std::vector<uint32_t> got(keys.size());
  std::memcpy(got.data(), (*on_1)->bytes().data(), 4096);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(got, keys);
  // Keys on one GPU, answer on the other: refused, naming both.
  buffers.keys = (*on_0)->bytes();
  const absl::Status across = RunSort(*set.backend, spec, buffers, Cancellation(), report, Memory::kDeviceRegion, (*on_1)->bytes());
  EXPECT_EQ(across.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(across.message().find("cuda:1 and cuda:0"), std::string_view::npos) << across;
}

TEST(GpuSet, CancellationStopsTheRunsNotYetStarted) {
  Set set = MakeSet(1, 1 << 20);  // 5000 keys are five runs of 1000
  Cancellation cancellation;
  cancellation.Cancel();
  SortSpec spec;
  std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 5000, 3);
  SortBuffers buffers;
  buffers.count = keys.size();
  buffers.keys = std::as_writable_bytes(std::span(keys));
  ExecutionReport report;
  EXPECT_EQ(RunSort(*set.backend, spec, buffers, cancellation, report).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(set.gpus[0]->calls.load(), 0);
}

// The merge alone: many runs, some empty, and runs that are not sorted (a region's owner wrote them
// meanwhile), which must give a permutation of the input and stay inside the arrays.
TEST(RunMerge, ManyRunsSomeEmptyMergeStablyOnManyThreads) {
  const std::size_t n = (std::size_t{4} << 20) + 3;  // enough for the parallel slices
  std::vector<uint64_t> keys = MakeInput<uint64_t>(Pattern::kFewDistinct, n, 8);
  std::vector<std::size_t> bounds = {0, 0, 1000, 1000, 500000, (std::size_t{3} << 20) - 5, n - 1, n};
  std::vector<int64_t> positions(n);
  for (std::size_t r = 0; r + 1 < bounds.size(); ++r) {
    std::vector<int64_t> idx = ReferenceStableArgsort(
        std::vector<uint64_t>(keys.begin() + bounds[r], keys.begin() + bounds[r + 1]), SortOrder::kAscending);
    std::vector<uint64_t> run(idx.size());
    for (std::size_t i = 0; i < idx.size(); ++i) {
      run[i] = keys[bounds[r] + idx[i]];
      positions[bounds[r] + i] = static_cast<int64_t>(bounds[r]) + idx[i];
    }
    std::copy(run.begin(), run.end(), keys.begin() + bounds[r]);
  }
  ASSERT_TRUE(cpu::MergeSortedRuns({.dtype = DType::kUInt64,
                        .bounds = bounds,
                        .keys = std::as_writable_bytes(std::span(keys)),
                        .payload_width = 8,
                        .payload = std::as_writable_bytes(std::span(positions))},
                       4, Cancellation())
                  .ok());
  const std::vector<uint64_t>& out = keys;
  const std::vector<int64_t>& out_positions = positions;
  std::vector<uint64_t> original = MakeInput<uint64_t>(Pattern::kFewDistinct, n, 8);
  EXPECT_EQ(out, ReferenceSort(original, SortOrder::kAscending));
  EXPECT_EQ(out_positions, ReferenceStableArgsort(original, SortOrder::kAscending));
}

TEST(RunMerge, ACancelledMergeStopsBetweenPasses) {
  std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 4000, 1);
  const std::vector<std::size_t> bounds = {0, 1000, 2000, 3000, 4000};
  Cancellation cancellation;
  cancellation.Cancel();
  EXPECT_EQ(cpu::MergeSortedRuns({.bounds = bounds, .keys = std::as_writable_bytes(std::span(keys))}, 2, cancellation)
                .code(),
            absl::StatusCode::kCancelled);
}

TEST(RunMerge, RunsThatAreNotSortedGiveAPermutationAndStayInBounds) {
  const std::size_t n = (std::size_t{4} << 20) + 11;
  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, n, 12);  // not sorted at all
  const std::vector<std::size_t> bounds = {0, n / 3, n / 2, n};
  std::vector<uint32_t> out = keys;
  ASSERT_TRUE(cpu::MergeSortedRuns({.dtype = DType::kUInt32, .bounds = bounds, .keys = std::as_writable_bytes(std::span(out))},
                                   4, Cancellation())
                  .ok());
  std::vector<uint32_t> a = keys, b = out;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace gpusort::testing
