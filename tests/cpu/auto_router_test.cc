// The router (server/backend/auto_router.h) sends each request to the engine the named algorithm
// belongs to, or where AUTO's policy (auto_policy.h) takes it, and says in the report which engine
// served. A stand-in GPU engine (the CPU engine under another name, counting what reaches it) lets
// this run without a GPU; tests/gpu/cuda_backend_test.cc and sort_ingest_test.cc check the real CUDA
// backend (the router above the CUDA engine) on the GPU machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "server/backend/auto_policy.h"
#include "server/backend/auto_router.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/core/dtype.h"
#include "tests/support/inputs.h"
#include "tests/support/own_memory_backend.h"

namespace gpusort {
namespace {

using testing::MakeInput;
using testing::Pattern;

struct Counts {
  std::atomic<int> sort{0}, topk{0}, ingest{0}, parted{0};
};

// The CPU engine wearing a GPU engine's name and lists (no CPU), counting the calls that reach it.
class StandInGpu final : public gpusort::testing::OwnMemoryBackend {
 public:
  explicit StandInGpu(std::shared_ptr<Counts> counts) : counts_(std::move(counts)) {}

  BackendKind kind() const override { return BackendKind::kCuda; }
  std::string device() const override { return "stand-in gpu"; }
  std::vector<Algorithm> sort_algorithms() const override { return {Algorithm::kRadix, Algorithm::kMerge}; }
  std::vector<Algorithm> topk_algorithms() const override { return {Algorithm::kRadix, Algorithm::kRadixSelect}; }
  absl::Status CheckSortLimits(const SortSpec&, std::size_t count) const override {
    return count <= kMaxKeys ? absl::OkStatus() : absl::InvalidArgumentError("stand-in gpu: too many keys");
  }
  absl::Status Sort(const SortSpec& spec, const SortBuffers& buffers, const Cancellation& cancellation,
                    ExecutionReport& report) override {
    ++counts_->sort;
    return RunSort(*cpu_, AsCpu(spec), buffers, cancellation, report);
  }
  std::unique_ptr<SortIngest> StartSortIngest(const SortSpec&) override {
    ++counts_->ingest;
    return nullptr;  // the router then collects the whole array and calls Sort
  }
  absl::StatusOr<std::unique_ptr<PartedSortIngest>> StartPartedSortIngest(const SortSpec& spec,
                                                                          std::size_t total_keys) override {
    ++counts_->parted;
    return Backend::StartPartedSortIngest(spec, total_keys);
  }
  absl::Status TopK(const TopKSpec& spec, const TopKBuffers& buffers, const Cancellation& cancellation,
                    ExecutionReport& report) override {
    ++counts_->topk;
    TopKSpec cpu = spec;
    cpu.algorithm = Algorithm::kAuto;
    return RunTopK(*cpu_, cpu, buffers, cancellation, report);
  }

  static constexpr std::size_t kMaxKeys = 1 << 20;

 private:
  static SortSpec AsCpu(SortSpec spec) {
    spec.algorithm = Algorithm::kAuto;
    return spec;
  }
  std::shared_ptr<Counts> counts_;
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend({});
};

// Sorts n random u32 keys through `router` with `algorithm`; checks the answer against std::sort, and
// without `status` that the sort succeeded.
ExecutionReport SortThrough(Backend& router, std::size_t n, Algorithm algorithm, absl::Status* status = nullptr) {
  std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, n, n);
  std::vector<uint32_t> want = keys;
  std::sort(want.begin(), want.end());
  SortSpec spec;
  spec.algorithm = algorithm;
  SortBuffers buffers;
  buffers.count = n;
  buffers.keys = std::as_writable_bytes(std::span(keys));
  ExecutionReport report;
  Cancellation cancellation;
  absl::Status s = RunSort(router, spec, buffers, cancellation, report);
  if (status != nullptr) {
    *status = s;
  } else {
    EXPECT_TRUE(s.ok()) << "n=" << n << ": " << s;
  }
  if (s.ok()) {
    EXPECT_EQ(keys, want) << "n=" << n;
  }
  return report;
}

class AutoRouterTest : public ::testing::Test {
 protected:
  void Make() {
    router_ = MakeAutoRouter(MakeCpuBackend({}), std::make_unique<StandInGpu>(counts_));
  }
  void SetUp() override { Make(); }

  // Without `status`, the sort must succeed.
  ExecutionReport SortOf(std::size_t n, Algorithm algorithm, absl::Status* status = nullptr) {
    return SortThrough(*router_, n, algorithm, status);
  }

  std::shared_ptr<Counts> counts_ = std::make_shared<Counts>();
  std::unique_ptr<Backend> router_;
};

TEST_F(AutoRouterTest, ItServesAsTheGpuEngineWithCpuAddedToItsLists) {
  EXPECT_EQ(router_->kind(), BackendKind::kCuda);
  EXPECT_EQ(router_->device(), "stand-in gpu");
  EXPECT_EQ(router_->sort_algorithms(), (std::vector<Algorithm>{Algorithm::kRadix, Algorithm::kMerge, Algorithm::kCpu}));
  EXPECT_EQ(router_->topk_algorithms(),
            (std::vector<Algorithm>{Algorithm::kRadix, Algorithm::kRadixSelect, Algorithm::kCpu}));
  EXPECT_TRUE(router_->SmallCallsAreCheap());  // AUTO's small work goes to the CPU engine
}

TEST_F(AutoRouterTest, AutoSortsSmallArraysOnTheCpuAndLargeOnesOnTheGpu) {
  const ExecutionReport small = SortOf(kAutoSortCpuBelowKeys - 1, Algorithm::kAuto);
  EXPECT_EQ(small.backend, BackendKind::kCpu);
  EXPECT_NE(small.device, "stand-in gpu");
  EXPECT_EQ(counts_->sort.load(), 0);
  const ExecutionReport large = SortOf(kAutoSortCpuBelowKeys, Algorithm::kAuto);
  EXPECT_EQ(large.backend, BackendKind::kCuda);
  EXPECT_EQ(large.device, "stand-in gpu");
  EXPECT_EQ(counts_->sort.load(), 1);
}

TEST_F(AutoRouterTest, ANamedAlgorithmGoesToItsEngineAtAnySize) {
  EXPECT_EQ(SortOf(10, Algorithm::kRadix).backend, BackendKind::kCuda);
  EXPECT_EQ(SortOf(100000, Algorithm::kCpu).backend, BackendKind::kCpu);
  EXPECT_EQ(counts_->sort.load(), 1);
  absl::Status status;
  SortOf(10, Algorithm::kRadixSelect, &status);  // a top-k kernel: neither engine sorts with it
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(status.message()).find("radix, merge, cpu"), std::string::npos) << status;
  EXPECT_EQ(counts_->sort.load(), 1);
}

TEST_F(AutoRouterTest, LimitsAreTheServingEnginesOnly) {
  SortSpec spec;  // AUTO
  EXPECT_TRUE(router_->CheckSortLimits(spec, StandInGpu::kMaxKeys).ok());
  EXPECT_EQ(router_->CheckSortLimits(spec, StandInGpu::kMaxKeys + 1).code(), absl::StatusCode::kInvalidArgument);
  spec.algorithm = Algorithm::kCpu;  // the CPU engine publishes no limit
  EXPECT_TRUE(router_->CheckSortLimits(spec, StandInGpu::kMaxKeys + 1).ok());
}

TEST_F(AutoRouterTest, AutoTopKWithSmallKStaysOnTheCpuAtEverySize) {
  const std::size_t n = 100000;
  std::vector<float> keys(n);  // finite, mostly distinct: std::greater is the reference's order
  for (std::size_t i = 0; i < n; ++i) keys[i] = static_cast<float>((i * 2654435761u) % 1000003);
  for (const std::size_t k : {kAutoTopKCpuUpToK, kAutoTopKCpuUpToK + 1}) {
    TopKSpec spec;
    spec.dtype = DType::kFloat32;
    spec.k = k;
    spec.output = TopKOutput::kValues;
    std::vector<float> values(k);
    TopKBuffers buffers;
    buffers.count = n;
    buffers.keys = std::as_bytes(std::span(keys));
    buffers.values_out = std::as_writable_bytes(std::span(values));
    ExecutionReport report;
    Cancellation cancellation;
    ASSERT_TRUE(RunTopK(*router_, spec, buffers, cancellation, report).ok());
    EXPECT_EQ(report.backend, k <= kAutoTopKCpuUpToK ? BackendKind::kCpu : BackendKind::kCuda) << "k=" << k;
    std::vector<float> want = keys;
    std::partial_sort(want.begin(), want.begin() + k, want.end(), std::greater<float>());
    want.resize(k);
    EXPECT_EQ(values, want) << "k=" << k;
  }
  EXPECT_EQ(counts_->topk.load(), 1);
}

// From registered shared memory the GPU reads the keys by DMA while the CPU must copy them first: a
// top-k with small k of kAutoPinnedTopKGpuFromKeys keys or more goes to the GPU there, and stays on the
// CPU from ordinary memory.
TEST_F(AutoRouterTest, PinnedTopKWithSmallKGoesToTheGpuFromAMillionKeys) {
  for (const std::size_t n : {kAutoPinnedTopKGpuFromKeys - 1, kAutoPinnedTopKGpuFromKeys}) {
    std::vector<float> keys(n);
    for (std::size_t i = 0; i < n; ++i) keys[i] = static_cast<float>((i * 2654435761u) % 1000003);
    TopKSpec spec;
    spec.dtype = DType::kFloat32;
    spec.k = 10;
    spec.output = TopKOutput::kValues;
    std::vector<float> values(spec.k);
    TopKBuffers buffers;
    buffers.count = n;
    buffers.keys = std::as_bytes(std::span(keys));
    buffers.values_out = std::as_writable_bytes(std::span(values));
    Cancellation cancellation;
    ExecutionReport pinned, plain;
    ASSERT_TRUE(RunTopK(*router_, spec, buffers, cancellation, pinned, Memory::kRegisteredHost).ok());
    ASSERT_TRUE(RunTopK(*router_, spec, buffers, cancellation, plain).ok());
    EXPECT_EQ(pinned.backend, n >= kAutoPinnedTopKGpuFromKeys ? BackendKind::kCuda : BackendKind::kCpu) << n;
    EXPECT_EQ(plain.backend, BackendKind::kCpu) << n;
    std::vector<float> want = keys;
    std::partial_sort(want.begin(), want.begin() + spec.k, want.end(), std::greater<float>());
    want.resize(spec.k);
    EXPECT_EQ(values, want) << n;
  }
  EXPECT_EQ(counts_->topk.load(), 1);
}

// A streamed AUTO Sort: short streams never reach the GPU engine; one that reaches AUTO's threshold is
// offered to it (this stand-in declines, so the router collects and sorts the whole on the GPU engine).
TEST_F(AutoRouterTest, StreamsGoToTheGpuEngineOnlyOnceTheyReachAutosThreshold) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{5}, kAutoSortCpuBelowKeys - 1, kAutoSortCpuBelowKeys + 3}) {
    SCOPED_TRACE(n);
    std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kReversed, n, 1);
    SortSpec spec;
    spec.payload = SortPayload::kIndices;
    std::unique_ptr<SortIngest> ingest = router_->StartSortIngest(spec);
    ASSERT_NE(ingest, nullptr);
    const auto bytes = std::as_bytes(std::span(keys));
    for (std::size_t at = 0; at < bytes.size(); at += 4093) {  // pieces that cut keys
      ASSERT_TRUE(ingest->Append(bytes.subspan(at, std::min<std::size_t>(4093, bytes.size() - at))).ok());
    }
    ExecutionReport report;
    Cancellation cancellation;
    ASSERT_TRUE(ingest->Sort(cancellation, report).ok());
    std::vector<uint32_t> sorted(n);
    std::vector<int64_t> indices(n);
    ASSERT_TRUE(ingest->Read(0, n, reinterpret_cast<std::byte*>(sorted.data()), indices.data()).ok());
    std::vector<uint32_t> want = keys;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(sorted, want);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(keys[indices[i]], sorted[i]) << i;
    const bool gpu = n >= kAutoSortCpuBelowKeys;
    EXPECT_EQ(report.backend, gpu ? BackendKind::kCuda : BackendKind::kCpu);
    EXPECT_EQ(counts_->ingest.load(), gpu ? 1 : 0);
    counts_->ingest = 0;
  }
  SortSpec values;
  values.payload = SortPayload::kValues;
  values.value_width = 4;
  EXPECT_EQ(router_->StartSortIngest(values), nullptr);
  SortSpec merge;
  merge.algorithm = Algorithm::kMerge;
  EXPECT_EQ(router_->StartSortIngest(merge), nullptr);
}

TEST_F(AutoRouterTest, PartedSortsGoToTheGpuEngineOnlyWhenAutoWouldSendTheWhole) {
  SortSpec spec;
  ASSERT_TRUE(router_->StartPartedSortIngest(spec, kAutoSortCpuBelowKeys - 1).ok());
  EXPECT_EQ(counts_->parted.load(), 0);
  ASSERT_TRUE(router_->StartPartedSortIngest(spec, kAutoSortCpuBelowKeys).ok());
  EXPECT_EQ(counts_->parted.load(), 1);
}


TEST(AutoPolicy, RoutingNamesParse) {
  for (const char* name : {"size", "load", "gpu"}) {
    ASSERT_TRUE(ParseAutoRouting(name).has_value()) << name;
    EXPECT_EQ(AutoRoutingName(*ParseAutoRouting(name)), name);
  }
  EXPECT_FALSE(ParseAutoRouting("fastest").has_value());
}

// The CPU engine, holding each Sort of a million keys or more until released, so that a test can keep
// work in flight on it.
class HeldCpu final : public gpusort::testing::OwnMemoryBackend {
 public:
  BackendKind kind() const override { return BackendKind::kCpu; }
  std::string device() const override { return "held cpu"; }
  std::vector<Algorithm> sort_algorithms() const override { return {Algorithm::kCpu}; }
  std::vector<Algorithm> topk_algorithms() const override { return {Algorithm::kCpu}; }
  absl::Status Sort(const SortSpec& spec, const SortBuffers& buffers, const Cancellation& cancellation,
                    ExecutionReport& report) override {
    if (buffers.count >= kHeldFromKeys) {
      ++started;
      while (!release.load()) std::this_thread::yield();
    }
    return RunSort(*cpu_, spec, buffers, cancellation, report);
  }
  absl::Status TopK(const TopKSpec& spec, const TopKBuffers& buffers, const Cancellation& cancellation,
                    ExecutionReport& report) override {
    return RunTopK(*cpu_, spec, buffers, cancellation, report);
  }
  static constexpr std::size_t kHeldFromKeys = 1 << 20;
  std::atomic<int> started{0};
  std::atomic<bool> release{false};

 private:
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend({});
};

// The load steps: alone, no lower than the size rule's threshold; it never falls as the load grows.
TEST(AutoPolicy, SortLoadStepsStartAtTheSizeRuleOrAboveAndOnlyRise) {
  EXPECT_GE(SortGpuFromKeysUnderLoad(0), kAutoSortCpuBelowKeys);
  EXPECT_EQ(SortGpuFromKeysUnderLoad(0), std::size_t{65536});
  std::size_t last = 0;
  for (int others : {0, 1, 3, 7, 8, 15, 63, 1000, 1 << 30}) {
    EXPECT_GE(SortGpuFromKeysUnderLoad(others), last) << others;
    last = SortGpuFromKeysUnderLoad(others);
  }
  EXPECT_EQ(SortGpuFromKeysUnderLoad(3), std::size_t{65536});
  EXPECT_EQ(SortGpuFromKeysUnderLoad(15), std::size_t{262144});
}

// Sorts of `n` AUTO keys held on the CPU engine (named CPU, so that they stay there) until released:
// requests in flight, as a loaded server has them.
class InFlight {
 public:
  InFlight(Backend& router, HeldCpu& cpu, int count) : cpu_(cpu) {
    const int before = cpu.started.load();
    for (int i = 0; i < count; ++i)
      threads_.emplace_back([&router] { (void)SortThrough(router, HeldCpu::kHeldFromKeys, Algorithm::kCpu); });
    while (cpu.started.load() < before + count) std::this_thread::yield();
  }
  ~InFlight() {
    cpu_.release = true;
    for (std::thread& t : threads_) t.join();
    cpu_.release = false;
  }

 private:
  HeldCpu& cpu_;
  std::vector<std::thread> threads_;
};

// The others in flight from which load-aware AUTO's second step holds.
constexpr int kFirstStepBelow = kAutoSortLoadSteps[0].others_in_flight_below;

// Load-aware AUTO's sorts of ordinary memory follow kAutoSortLoadSteps: with others in flight a sort
// must be larger to go to the GPU, and once they are done the size rule's threshold is back.
TEST(AutoRouterLoad, RequestsInFlightRaiseTheSizeFromWhichSortsGoToTheGpu) {
  auto counts = std::make_shared<Counts>();
  auto held = std::make_unique<HeldCpu>();
  HeldCpu& cpu = *held;
  auto router = MakeAutoRouter(std::move(held), std::make_unique<StandInGpu>(counts), AutoRouting::kLoad);
  auto sort = [&](std::size_t n) { return SortThrough(*router, n, Algorithm::kAuto).backend; };
  EXPECT_EQ(sort(65536), BackendKind::kCuda) << "alone";
  EXPECT_EQ(sort(65535), BackendKind::kCpu);
  EXPECT_EQ(sort(16384), BackendKind::kCpu) << "the size rule's threshold is a tie, left to the CPU";
  {
    InFlight one(*router, cpu, 1);
    EXPECT_EQ(sort(65535), BackendKind::kCpu);
    EXPECT_EQ(sort(65536), BackendKind::kCuda);
    EXPECT_EQ(sort(1000), BackendKind::kCpu);
  }
  {
    InFlight below(*router, cpu, kFirstStepBelow - 1);
    EXPECT_EQ(sort(65536), BackendKind::kCuda);
  }
  {
    InFlight at(*router, cpu, kFirstStepBelow);
    EXPECT_EQ(sort(65536), BackendKind::kCpu);
    EXPECT_EQ(sort(262143), BackendKind::kCpu);
    EXPECT_EQ(sort(262144), BackendKind::kCuda);
  }
  EXPECT_EQ(sort(65536), BackendKind::kCuda) << "the load gone, the first step again";
  EXPECT_EQ(counts->sort.load(), 5);
}

// With the server's calls in flight handed over (the scheduler's tickets), load-aware AUTO counts them,
// this one aside, as the steps were measured: calls decoding, queued or answering are load though no
// engine holds them. What the engines hold still counts when it is more.
TEST(AutoRouterLoad, TheServersCallsInFlightCountWhereTheyAreMoreThanTheEnginesHold) {
  auto counts = std::make_shared<Counts>();
  auto held = std::make_unique<HeldCpu>();
  HeldCpu& cpu = *held;
  auto router = MakeAutoRouter(std::move(held), std::make_unique<StandInGpu>(counts), AutoRouting::kLoad);
  auto calls = std::make_shared<std::atomic<int>>(1);
  router->WatchCallsInFlight(calls);
  auto sort = [&](std::size_t n) { return SortThrough(*router, n, Algorithm::kAuto).backend; };
  EXPECT_EQ(sort(65536), BackendKind::kCuda) << "this call alone";
  calls->store(kFirstStepBelow);
  EXPECT_EQ(sort(65536), BackendKind::kCuda) << "one other too few: the first step";
  calls->store(kFirstStepBelow + 1);
  EXPECT_EQ(sort(65536), BackendKind::kCpu) << "the second step";
  EXPECT_EQ(sort(262143), BackendKind::kCpu);
  EXPECT_EQ(sort(262144), BackendKind::kCuda);
  calls->store(16);
  EXPECT_EQ(sort(65536), BackendKind::kCpu) << "16 in flight, none inside an engine";
  calls->store(1);
  {
    InFlight held(*router, cpu, kFirstStepBelow);
    EXPECT_EQ(sort(65536), BackendKind::kCpu) << "held inside an engine, though the count says 1";
  }
  EXPECT_EQ(sort(65536), BackendKind::kCuda);
}

// A GPU stand-in that holds, until released, each way large work reaches it other than Sort: a
// stream's sort, a parted sort (gathered on the host, then through its Sort of a million keys or more),
// and a sort of device memory. Each holds one "started" while it waits.
class HeldGpu final : public gpusort::testing::OwnMemoryBackend {
 public:
  BackendKind kind() const override { return BackendKind::kCuda; }
  std::string device() const override { return "held gpu"; }
  std::vector<Algorithm> sort_algorithms() const override { return {Algorithm::kRadix}; }
  std::vector<Algorithm> topk_algorithms() const override { return {Algorithm::kRadix}; }
  absl::Status Sort(const SortSpec& spec, const SortBuffers& buffers, const Cancellation& cancellation,
                    ExecutionReport& report) override {
    if (buffers.count >= kHeldFromKeys) Hold();
    return RunSort(*cpu_, AsCpu(spec), buffers, cancellation, report);
  }
  std::unique_ptr<SortIngest> StartSortIngest(const SortSpec& spec) override {
    return std::make_unique<HeldIngest>(*this, spec);
  }
  absl::Status Run(const Job& job) override {
    if (job.memory != Memory::kDeviceRegion) return gpusort::testing::OwnMemoryBackend::Run(job);
    Hold();  // only where it runs matters here: nothing to sort in host memory posing as the device's
    return absl::OkStatus();
  }
  absl::Status TopK(const TopKSpec& spec, const TopKBuffers& buffers, const Cancellation& cancellation,
                    ExecutionReport& report) override {
    TopKSpec cpu = spec;
    cpu.algorithm = Algorithm::kAuto;
    return RunTopK(*cpu_, cpu, buffers, cancellation, report);
  }

  void Hold() {
    ++started;
    while (!release.load()) std::this_thread::yield();
  }

  static constexpr std::size_t kHeldFromKeys = 1 << 20;
  std::atomic<int> started{0};
  std::atomic<bool> release{false};

 private:
  // A stream's keys, collected and sorted by the CPU engine once released.
  class HeldIngest final : public SortIngest {
   public:
    HeldIngest(HeldGpu& gpu, const SortSpec& spec) : gpu_(gpu), spec_(AsCpu(spec)) {}
    absl::Status Append(std::span<const std::byte> keys) override {
      keys_.insert(keys_.end(), keys.begin(), keys.end());
      return absl::OkStatus();
    }
    absl::Status Sort(const Cancellation& cancellation, ExecutionReport& report) override {
      gpu_.Hold();
      SortBuffers buffers;
      buffers.count = keys_.size() / ElementSize(spec_.dtype);
      buffers.keys = std::span(keys_);
      return RunSort(*gpu_.cpu_, spec_, buffers, cancellation, report);
    }
    absl::Status Read(std::size_t begin, std::size_t end, std::byte* keys, int64_t*) override {
      const std::size_t width = ElementSize(spec_.dtype);
      std::copy(keys_.begin() + begin * width, keys_.begin() + end * width, keys);
      return absl::OkStatus();
    }

   private:
    HeldGpu& gpu_;
    const SortSpec spec_;
    std::vector<std::byte> keys_;
  };

  static SortSpec AsCpu(SortSpec spec) {
    spec.algorithm = Algorithm::kAuto;
    return spec;
  }
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend({});
};

// Eight of one kind of GPU work held in flight: load-aware AUTO counts them as it counts Sorts, so a
// sort must be of the second step's size to join them on the GPU; released, the first step is back.
TEST(AutoRouterLoad, StreamsPartedSortsBatchesAndDeviceMemoryCountAsRequestsInFlight) {
  auto owned = std::make_unique<HeldGpu>();
  HeldGpu& gpu = *owned;
  auto router = MakeAutoRouter(MakeCpuBackend({}), std::move(owned), AutoRouting::kLoad);
  auto sort = [&](std::size_t n) { return SortThrough(*router, n, Algorithm::kAuto).backend; };
  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, HeldGpu::kHeldFromKeys, 7);
  const auto key_bytes = std::as_bytes(std::span(keys));
  const SortSpec spec;
  Cancellation cancellation;

  const std::vector<std::pair<std::string, std::function<void()>>> kinds = {
      {"streams",
       [&] {
         std::unique_ptr<SortIngest> ingest = router->StartSortIngest(spec);
         ASSERT_NE(ingest, nullptr);
         ASSERT_TRUE(ingest->Append(key_bytes.first(kAutoSortCpuBelowKeys * sizeof(uint32_t))).ok());
         ExecutionReport report;
         EXPECT_TRUE(ingest->Sort(cancellation, report).ok());
         EXPECT_EQ(report.backend, BackendKind::kCuda);
       }},
      {"parted sorts",
       [&] {
         auto ingest = router->StartPartedSortIngest(spec, keys.size());
         ASSERT_TRUE(ingest.ok()) << ingest.status();
         ASSERT_TRUE((*ingest)->Write(0, key_bytes).ok());
         ExecutionReport report;
         EXPECT_TRUE((*ingest)->Sort(cancellation, report).ok());
       }},
      {"device memory",
       [&] {
         std::vector<uint32_t> out(16);
         SortBuffers buffers;
         buffers.count = out.size();
         buffers.keys = std::as_writable_bytes(std::span(out));
         ExecutionReport report;
         EXPECT_TRUE(RunSort(*router, spec, buffers, cancellation, report, Memory::kDeviceRegion, key_bytes.first(64)).ok());
       }},
  };
  for (const auto& [name, work] : kinds) {
    SCOPED_TRACE(name);
    const int before = gpu.started.load();
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) threads.emplace_back(work);
    while (gpu.started.load() < before + 8) std::this_thread::yield();
    EXPECT_EQ(sort(65536), BackendKind::kCpu) << "8 in flight on the GPU: the first step no longer";
    EXPECT_EQ(sort(262144), BackendKind::kCuda);
    gpu.release = true;
    for (std::thread& t : threads) t.join();
    gpu.release = false;
    EXPECT_EQ(sort(65536), BackendKind::kCuda) << "released";
  }
}

TEST(AutoRouterLoad, GpuRoutingSendsEveryAutoCallToTheGpuEngine) {
  auto counts = std::make_shared<Counts>();
  auto router = MakeAutoRouter(MakeCpuBackend({}), std::make_unique<StandInGpu>(counts), AutoRouting::kGpu);
  EXPECT_FALSE(router->SmallCallsAreCheap()) << "no AUTO call may run inline on a gRPC thread";
  std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 100, 1);
  SortSpec spec;
  SortBuffers buffers;
  buffers.count = keys.size();
  buffers.keys = std::as_writable_bytes(std::span(keys));
  ExecutionReport report;
  Cancellation cancellation;
  ASSERT_TRUE(RunSort(*router, spec, buffers, cancellation, report).ok());
  EXPECT_EQ(report.backend, BackendKind::kCuda);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  spec.algorithm = Algorithm::kCpu;  // a named CPU still goes to the CPU
  ASSERT_TRUE(RunSort(*router, spec, buffers, cancellation, report).ok());
  EXPECT_EQ(report.backend, BackendKind::kCpu);
  EXPECT_EQ(counts->sort.load(), 1);
}

}  // namespace
}  // namespace gpusort
