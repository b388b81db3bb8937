// A key source added as one file: the job model's promise (server/backend/cuda/gpu_job_ends.h) that a
// new way in is one small type implementing GpuKeySource, with no change to the jobs, the pipeline or
// the engine. GeneratedKeys below is that type: a stand-in for a producer that has no array to hand
// over, which computes its keys (one of the adversarial patterns) only when the job asks for them and
// sends them through the slot's staging buffers. SortJob and TopKSelectJob run on it unchanged, and
// their answers match the CPU engine's on the same keys. GpuJobStages uses it to check the pipeline's
// stage times. Skips when no GPU is usable.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "gpusort/kernels/runtime.h"
#include "server/backend/cuda/device_context.h"
#include "server/backend/cuda/gpu_job.h"
#include "server/backend/cuda/gpu_job_ends.h"
#include "server/backend/cuda/sort_job.h"
#include "server/backend/cuda/staged_host_ends.h"
#include "server/backend/cuda/staging.h"
#include "server/backend/cuda/top_k_jobs.h"
#include "tests/gpu/backends.h"
#include "tests/support/inputs.h"

namespace gpusort {
namespace {

using gpusort::testing::Bytes;
using gpusort::testing::Cpu;
using gpusort::testing::MakeInput;
using gpusort::testing::Pattern;

// The test double: float keys of `pattern`, made when the job ingests, never before.
class GeneratedKeys final : public GpuKeySource {
 public:
  GeneratedKeys(Pattern pattern, std::size_t count) : pattern_(pattern), count_(count) {}
  std::size_t count() const override { return count_; }
  absl::StatusOr<std::uint64_t> IngestKeys(const GpuJobEnv& env, const KeyCoding& coding, void* device_keys) override {
    made_ = Bytes(MakeInput<float>(pattern_, count_, /*seed=*/42));
    KeyBitsScan scan;
    absl::Status status = Upload(env.slot, made_.data(), device_keys, count_, KeyElementBytes(coding.dtype),
                                 ToOrderedBitsFn(coding.dtype, coding.complement, &scan));
    if (!status.ok()) return status;
    return scan.varying();
  }
  const std::vector<std::byte>& made() const { return made_; }

 private:
  Pattern pattern_;
  std::size_t count_;
  std::vector<std::byte> made_;  // the host side of the copy, alive until the job has waited for it
};

std::unique_ptr<DeviceContext> Context() {
  std::string why;
  if (kernels::CountDevices(&why) == 0) return nullptr;
  auto context = DeviceContext::Create({.ordinal = 0, .streams = 2});
  return context.ok() ? std::move(*context) : nullptr;
}

class GpuJobSource : public ::testing::TestWithParam<Pattern> {};

TEST_P(GpuJobSource, SortJobRunsOnANewSourceUnchanged) {
  std::unique_ptr<DeviceContext> context = Context();
  if (context == nullptr) GTEST_SKIP() << "no usable GPU";
  for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
    const std::size_t n = 65537;  // just past a power of two, several staging chunks of keys
    const SortSpec spec{.dtype = DType::kFloat32, .order = order, .payload = SortPayload::kIndices};
    GeneratedKeys source(GetParam(), n);
    std::vector<std::byte> keys(n * sizeof(float));
    std::vector<int64_t> positions(n, -1);
    StagedHostResults sink(keys, positions);
    SortJob job(spec, Algorithm::kRadix, source, sink);
    ExecutionReport report;
    ASSERT_TRUE(RunGpuJob(*context, job, Cancellation(), report).ok());

    // The reference: the CPU engine's argsort of the very keys the source made.
    std::vector<std::byte> expected = source.made();
    std::vector<int64_t> expected_positions(n);
    ExecutionReport cpu_report;
    ASSERT_TRUE(RunSort(*Cpu(), spec, {.count = n, .keys = expected, .indices_out = expected_positions}, Cancellation(), cpu_report)
                    .ok());
    EXPECT_EQ(keys, expected) << "order " << static_cast<int>(order);
    EXPECT_EQ(positions, expected_positions) << "order " << static_cast<int>(order);
    // The pipeline stamped its stages: the lease, the copy in, the kernels and the copy out.
    std::vector<Stage> stages;
    for (const StageTime& s : report.stages) stages.push_back(s.stage);
    EXPECT_EQ(stages, (std::vector<Stage>{Stage::kStreamWait, Stage::kH2d, Stage::kKernel, Stage::kD2h}));
  }
}

TEST_P(GpuJobSource, TopKSelectJobRunsOnANewSourceUnchanged) {
  std::unique_ptr<DeviceContext> context = Context();
  if (context == nullptr) GTEST_SKIP() << "no usable GPU";
  const std::size_t n = 100003, k = 100;
  const TopKSpec spec{.dtype = DType::kFloat32, .k = k, .largest = true};
  GeneratedKeys source(GetParam(), n);
  std::vector<std::byte> values(k * sizeof(float));
  std::vector<int64_t> positions(k, -1);
  StagedHostResults sink(values, positions);
  TopKSelectJob job(spec, Algorithm::kRadixSelect, source, sink);
  ExecutionReport report;
  ASSERT_TRUE(RunGpuJob(*context, job, Cancellation(), report).ok());

  std::vector<std::byte> expected(k * sizeof(float));
  std::vector<int64_t> expected_positions(k);
  ExecutionReport cpu_report;
  ASSERT_TRUE(RunTopK(*Cpu(), spec, {.count = n, .keys = source.made(), .values_out = expected,
                                 .indices_out = expected_positions}, Cancellation(), cpu_report)
                  .ok());
  EXPECT_EQ(values, expected);
  EXPECT_EQ(positions, expected_positions);
}

// The stages a job reports lie one after the other inside its whole time: "d2h" starts where the
// kernels end (an event), not where the host queued the copy behind them, so a job's kernels are not
// counted again in its copy out (they were: a 16M shared-memory sort read kernel 0.25 ms, d2h 1.47, and
// the three stages summed to more than the server's whole time).
TEST(GpuJobStages, AddUpToNoMoreThanTheJobsWholeTime) {
  std::unique_ptr<DeviceContext> context = Context();
  if (context == nullptr) GTEST_SKIP() << "no usable GPU";
  const std::size_t n = std::size_t{1} << 22;  // kernels of a few hundred microseconds
  const SortSpec spec{.dtype = DType::kFloat32, .payload = SortPayload::kIndices};
  GeneratedKeys source(Pattern::kRandom, n);
  std::vector<std::byte> keys(n * sizeof(float));
  std::vector<int64_t> positions(n, -1);
  StagedHostResults sink(keys, positions);
  for (int run = 0; run < 3; ++run) {  // the first run pays for the pool's first allocations
    SortJob job(spec, Algorithm::kRadix, source, sink);
    ExecutionReport report;
    const auto begin = std::chrono::steady_clock::now();
    ASSERT_TRUE(RunGpuJob(*context, job, Cancellation(), report).ok());
    const double whole = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    double kernel = 0, d2h = 0, summed = 0;
    for (const StageTime& s : report.stages) {
      summed += s.seconds;
      if (s.stage == Stage::kKernel) kernel = s.seconds;
      if (s.stage == Stage::kD2h) d2h = s.seconds;
    }
    EXPECT_GT(kernel, 0) << "run " << run;
    EXPECT_GT(d2h, 0) << "run " << run;
    // 5 us for the host's and the GPU's clocks, each read to the microsecond.
    EXPECT_LE(summed, whole + 5e-6) << "run " << run << ": kernel " << kernel << " s, d2h " << d2h << " s";
  }
}

INSTANTIATE_TEST_SUITE_P(Patterns, GpuJobSource, ::testing::ValuesIn(gpusort::testing::kAllPatterns),
                         [](const auto& info) { return gpusort::testing::PatternName(info.param); });

}  // namespace
}  // namespace gpusort
