// CPU backend contract: identity, algorithm choice, cancellation and deadlines, stage reports,
// buffer checks.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <algorithm>

#include "server/backend/cpu/cpu_backend.h"
#include "tests/support/inputs.h"

namespace gpusort {
namespace {

using gpusort::testing::MakeInput;
using gpusort::testing::Pattern;

// A sort request over owned buffers.
struct SortJob {
  explicit SortJob(std::size_t n, SortPayload payload = SortPayload::kIndices) {
    const std::vector<uint64_t> in = MakeInput<uint64_t>(Pattern::kRandom, n, 3);
    keys.resize(n * sizeof(uint64_t));
    // Not for n = 0: memcpy from and to the null data() of empty vectors is undefined (UBSan says so).
    if (n > 0) std::memcpy(keys.data(), in.data(), keys.size());
    indices.resize(n);
    spec.dtype = DType::kUInt64;
    spec.payload = payload;
    buffers.count = n;
    buffers.keys = keys;
    if (payload == SortPayload::kIndices) buffers.indices_out = indices;
  }
  std::vector<std::byte> keys;
  std::vector<int64_t> indices;
  SortSpec spec;
  SortBuffers buffers;
};

struct TopKJob {
  explicit TopKJob(std::size_t n, std::size_t k) {
    const std::vector<uint32_t> in = MakeInput<uint32_t>(Pattern::kRandom, n, 4);
    keys.resize(n * sizeof(uint32_t));
    std::memcpy(keys.data(), in.data(), keys.size());
    values.resize(k * sizeof(uint32_t));
    indices.resize(k);
    spec.k = k;
    buffers.count = n;
    buffers.keys = keys;
    buffers.values_out = values;
    buffers.indices_out = indices;
  }
  std::vector<std::byte> keys, values;
  std::vector<int64_t> indices;
  TopKSpec spec;
  TopKBuffers buffers;
};

TEST(CpuBackend, Identity) {
  std::unique_ptr<Backend> backend = MakeCpuBackend({.threads = 2});
  EXPECT_EQ(backend->kind(), BackendKind::kCpu);
  EXPECT_EQ(backend->device(), "cpu (2 threads)");
  EXPECT_EQ(backend->sort_algorithms(), std::vector<Algorithm>{Algorithm::kCpu});
  EXPECT_EQ(backend->topk_algorithms(), std::vector<Algorithm>{Algorithm::kCpu});
  EXPECT_EQ(MakeCpuBackend({.threads = 1})->device(), "cpu (1 thread)");
  // 0 = all cores: some positive number of threads.
  const std::string all = MakeCpuBackend()->device();
  EXPECT_EQ(all.rfind("cpu (", 0), 0u) << all;
  EXPECT_EQ(all.find("cpu (0"), std::string::npos) << all;
}

TEST(CpuBackend, AutoAndCpuRunAndReportStages) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kCpu}) {
    SortJob job(100'000);
    job.spec.algorithm = a;
    Cancellation cancellation;
    ExecutionReport report;
    ASSERT_TRUE(RunSort(*backend, job.spec, job.buffers, cancellation, report).ok());
    EXPECT_EQ(report.algorithm, Algorithm::kCpu);
    ASSERT_FALSE(report.stages.empty());
    EXPECT_EQ(report.stages[0].stage, Stage::kSort);
    EXPECT_GE(report.stages[0].seconds, 0.0);

    TopKJob topk(100'000, 10);
    topk.spec.algorithm = a;
    ExecutionReport topk_report;
    ASSERT_TRUE(RunTopK(*backend, topk.spec, topk.buffers, cancellation, topk_report).ok());
    EXPECT_EQ(topk_report.algorithm, Algorithm::kCpu);
    ASSERT_EQ(topk_report.stages.size(), 1u);
    EXPECT_EQ(topk_report.stages[0].stage, Stage::kSelect);
  }
}

TEST(CpuBackend, WideValuesReportAGatherStage) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  SortJob job(10'000, SortPayload::kValues);
  std::vector<std::byte> values(10'000 * 24), out(10'000 * 24);
  job.spec.value_width = 24;
  job.buffers.values = values;
  job.buffers.values_out = out;
  Cancellation cancellation;
  ExecutionReport report;
  ASSERT_TRUE(RunSort(*backend, job.spec, job.buffers, cancellation, report).ok());
  ASSERT_EQ(report.stages.size(), 2u);
  EXPECT_EQ(report.stages[0].stage, Stage::kSort);
  EXPECT_EQ(report.stages[1].stage, Stage::kGather);
}

TEST(CpuBackend, OtherAlgorithmsAreUnimplemented) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  for (Algorithm a : {Algorithm::kRadix, Algorithm::kMerge, Algorithm::kBitonic, Algorithm::kOddEven,
                      Algorithm::kQuicksort}) {
    SortJob job(1000);
    job.spec.algorithm = a;
    const std::vector<std::byte> before = job.keys;
    Cancellation cancellation;
    ExecutionReport report;
    const absl::Status s = RunSort(*backend, job.spec, job.buffers, cancellation, report);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
    EXPECT_NE(std::string(s.message()).find("available"), std::string::npos) << s;
    EXPECT_NE(std::string(s.message()).find("cpu"), std::string::npos) << s;
    EXPECT_EQ(job.keys, before) << "an unavailable algorithm must not touch the keys";

    TopKJob topk(1000, 5);
    topk.spec.algorithm = a;
    const absl::Status t = RunTopK(*backend, topk.spec, topk.buffers, cancellation, report);
    EXPECT_EQ(t.code(), absl::StatusCode::kUnimplemented) << t;
    EXPECT_NE(std::string(t.message()).find("available"), std::string::npos) << t;
  }
}

TEST(CpuBackend, PreCancelledIsCancelled) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  for (std::size_t n : {std::size_t{100}, std::size_t{1'000'000}}) {
    Cancellation cancellation;
    cancellation.Cancel();
    ExecutionReport report;
    SortJob job(n);
    EXPECT_EQ(RunSort(*backend, job.spec, job.buffers, cancellation, report).code(),
              absl::StatusCode::kCancelled);
    TopKJob topk(n, 3);
    EXPECT_EQ(RunTopK(*backend, topk.spec, topk.buffers, cancellation, report).code(),
              absl::StatusCode::kCancelled);
  }
}

TEST(CpuBackend, ExpiredDeadlineIsDeadlineExceeded) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  const auto past = Cancellation::Clock::now() - std::chrono::seconds(1);
  for (std::size_t n : {std::size_t{100}, std::size_t{1'000'000}}) {
    Cancellation cancellation(past);
    ExecutionReport report;
    SortJob job(n);
    EXPECT_EQ(RunSort(*backend, job.spec, job.buffers, cancellation, report).code(),
              absl::StatusCode::kDeadlineExceeded);
    TopKJob topk(n, 3);
    EXPECT_EQ(RunTopK(*backend, topk.spec, topk.buffers, cancellation, report).code(),
              absl::StatusCode::kDeadlineExceeded);
  }
}

// A deadline that passes while the sort runs stops it between radix passes.
TEST(CpuBackend, DeadlinePassingMidSortStopsIt) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  SortJob job(4'000'000);  // 8 radix passes over 64-bit keys: tens of milliseconds at least
  Cancellation cancellation(Cancellation::Clock::now() + std::chrono::milliseconds(2));
  ExecutionReport report;
  EXPECT_EQ(RunSort(*backend, job.spec, job.buffers, cancellation, report).code(),
            absl::StatusCode::kDeadlineExceeded);
}

// Many-row top-k checks cancellation between tasks of rows.
TEST(CpuBackend, CancelledManyRowTopK) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  TopKJob topk(800'000, 2);
  topk.spec.rows = 100'000;
  topk.values.resize(100'000 * 2 * sizeof(uint32_t));
  topk.indices.resize(100'000 * 2);
  topk.buffers.values_out = topk.values;
  topk.buffers.indices_out = topk.indices;
  Cancellation live;
  ExecutionReport report;
  ASSERT_TRUE(RunTopK(*backend, topk.spec, topk.buffers, live, report).ok());
  Cancellation cancelled;
  cancelled.Cancel();
  EXPECT_EQ(RunTopK(*backend, topk.spec, topk.buffers, cancelled, report).code(),
            absl::StatusCode::kCancelled);
}

TEST(CpuBackend, InconsistentBuffersAreRejected) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  Cancellation cancellation;
  ExecutionReport report;
  SortJob job(1000);
  job.buffers.indices_out = std::span<int64_t>(job.indices).first(999);
  EXPECT_EQ(RunSort(*backend, job.spec, job.buffers, cancellation, report).code(),
            absl::StatusCode::kInvalidArgument);
  TopKJob topk(1000, 5);
  topk.spec.k = 1001;
  EXPECT_EQ(RunTopK(*backend, topk.spec, topk.buffers, cancellation, report).code(),
            absl::StatusCode::kInvalidArgument);
  TopKJob rows(1000, 5);
  rows.spec.rows = 3;
  EXPECT_EQ(RunTopK(*backend, rows.spec, rows.buffers, cancellation, report).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CpuBackend, EmptyInputs) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  Cancellation cancellation;
  ExecutionReport report;
  SortJob job(0);
  EXPECT_TRUE(RunSort(*backend, job.spec, job.buffers, cancellation, report).ok());
}

// Calls from several threads at once share the backend's arena.
TEST(CpuBackend, ConcurrentCallers) {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  std::vector<std::thread> callers;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      SortJob job(300'000 + t);
      Cancellation cancellation;
      ExecutionReport report;
      if (!RunSort(*backend, job.spec, job.buffers, cancellation, report).ok()) return;
      std::vector<uint64_t> keys(job.buffers.count);
      std::memcpy(keys.data(), job.keys.data(), job.keys.size());
      ok[t] = std::is_sorted(keys.begin(), keys.end()) ? 1 : 0;
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(ok, std::vector<int>(4, 1));
}

}  // namespace
}  // namespace gpusort
