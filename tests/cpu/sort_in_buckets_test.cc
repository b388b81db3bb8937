// A Sort of keys alone larger than the GPUs, cut into buckets by sampled splitters first (issue 44,
// server/backend/sort_in_buckets.h, cpu/bucket_partition.h), with CPU engines standing in for the GPUs:
// every dtype, both orders, every input pattern, sizes around the buckets', a bucket of one key's
// millions of equals, a bucket the sample misjudged past a run, and separate input and output, each
// bit for bit against the stable reference sort.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "server/backend/cpu/bucket_partition.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/backend/sort_in_buckets.h"
#include "server/core/dtype.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

struct Engines {
  std::vector<std::unique_ptr<Backend>> owned;
  RunPlan plan;
  Engines(int count, std::size_t run_keys) {
    for (int e = 0; e < count; ++e) {
      owned.push_back(MakeCpuBackend({}));
      plan.engines.push_back(owned.back().get());
    }
    plan.run_keys = run_keys;
    plan.merge_threads = 2;
  }
};

bool HasStage(const ExecutionReport& report, Stage stage) {
  return std::any_of(report.stages.begin(), report.stages.end(), [&](const StageTime& s) { return s.stage == stage; });
}

// Sorts `keys` in buckets (from a separate input when `pinned`) and checks the answer.
template <typename T>
ExecutionReport ExpectSortedInBuckets(const Engines& engines, const std::vector<T>& keys, SortOrder order, bool pinned,
                                      const std::string& what) {
  SortSpec spec;
  spec.dtype = DTypeOf<T>::value;
  spec.order = order;
  spec.stable = true;
  const std::vector<T> input = keys;
  std::vector<T> got = pinned ? std::vector<T>(keys.size()) : keys;
  SortBuffers buffers;
  buffers.count = keys.size();
  buffers.keys = std::as_writable_bytes(std::span(got));
  ExecutionReport report;
  const absl::Status status = SortInBuckets(spec, pinned ? std::as_bytes(std::span(input)) : std::span<const std::byte>(),
                                            buffers, pinned, engines.plan, Cancellation(), report);
  EXPECT_TRUE(status.ok()) << what << ": " << status;
  EXPECT_TRUE(SameBits(got, ReferenceSort(keys, order))) << what;
  EXPECT_TRUE(SameBits(input, keys)) << what << ": the input changed";
  return report;
}

template <typename T>
class SortInBucketsTyped : public ::testing::Test {};
using KeyTypes = ::testing::Types<int32_t, uint32_t, int64_t, uint64_t, float, double, Float16, BFloat16, int16_t,
                                  uint16_t, int8_t, uint8_t>;
TYPED_TEST_SUITE(SortInBucketsTyped, KeyTypes);

TYPED_TEST(SortInBucketsTyped, EveryPatternBothOrdersAsOneSortWould) {
  using T = TypeParam;
  for (const std::size_t run : {std::size_t{64}, std::size_t{1000}}) {
    const Engines engines(2, run);
    for (const SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
      for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, run - 1, run + 1, 4 * run + 7,
                                  std::size_t{20011}}) {
        for (const Pattern pattern : kAllPatterns) {
          const std::string what = "n=" + std::to_string(n) + " run=" + std::to_string(run) + " " + PatternName(pattern) +
                                   (order == SortOrder::kDescending ? " desc" : " asc");
          ExpectSortedInBuckets(engines, MakeInput<T>(pattern, n, n + 11), order, /*pinned=*/n % 2 == 1, what);
        }
      }
    }
  }
}

// One key with 90% of the array: its equals make a bucket of their own, which no engine sorts (they are
// in order already), however far past a run it is.
TEST(SortInBuckets, AKeyWithMillionsOfEqualsIsABucketOfItsOwn) {
  std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 200000, 5);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i % 10 != 0) keys[i] = 777;
  }
  const Engines engines(2, 5000);
  const ExecutionReport report = ExpectSortedInBuckets(engines, keys, SortOrder::kAscending, false, "90% one key");
  EXPECT_FALSE(HasStage(report, Stage::kMerge)) << "no bucket should have needed runs";
}

// An array that fools the sample: every sampled position holds 0 and the rest distinct keys, so that all
// of them fall in one bucket far past a run. That bucket is sorted in runs and merged; the answer is
// still exact. (60000 keys, runs of 300: 400 buckets aimed at, 102400 samples, so every sample the
// sort reads is one of the first 60000.)
TEST(SortInBuckets, ABucketTheSampleMisjudgedPastARunIsSortedInRuns) {
  std::vector<uint64_t> keys(60000);
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = 1 + ((i * 2654435761u) % 1000003);
  for (std::size_t j = 0; j < keys.size(); ++j) keys[cpu::SamplePosition(j, keys.size())] = 0;
  const Engines engines(2, 300);
  for (const SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
    const ExecutionReport report = ExpectSortedInBuckets(engines, keys, order, true, "fooled sample");
    EXPECT_TRUE(HasStage(report, Stage::kMerge)) << "the misjudged bucket was not sorted in runs";
  }
}

TEST(SortInBuckets, PartitionKeepsInputOrderWithinEachBucketAndBucketsInSortOrder) {
  const std::vector<float> keys = MakeInput<float>(Pattern::kSpecials, 50000, 9);
  for (const bool descending : {false, true}) {
    const cpu::BucketPlan plan =
        cpu::SampleSplitters(DType::kFloat32, descending, std::as_bytes(std::span(keys)), keys.size(), 8);
    ASSERT_FALSE(plan.splitters.empty());
    std::vector<float> out(keys.size());
    const std::vector<std::size_t> bounds = cpu::PartitionByBuckets(
        plan, std::as_bytes(std::span(keys)), std::as_writable_bytes(std::span(out)), keys.size(), 2);
    ASSERT_EQ(bounds.size(), plan.bucket_count() + 1);
    ASSERT_EQ(bounds.back(), keys.size());
    // Sorting each bucket stably gives the stable sort of the whole.
    for (std::size_t b = 0; b + 1 < bounds.size(); ++b) {
      std::stable_sort(out.begin() + bounds[b], out.begin() + bounds[b + 1], [&](float x, float y) {
        return descending ? KeyGreater<float>()(x, y) : KeyLess<float>()(x, y);
      });
    }
    EXPECT_TRUE(SameBits(out, ReferenceSort(keys, descending ? SortOrder::kDescending : SortOrder::kAscending)));
  }
}

// More splitters than the classifier's table can name buckets for (2 * m past 65534): every key
// searches the splitters, and the partition is still right.
TEST(SortInBuckets, PartitionWithTensOfThousandsOfSplitters) {
  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 200000, 12);
  const cpu::BucketPlan plan =
      cpu::SampleSplitters(DType::kUInt32, false, std::as_bytes(std::span(keys)), keys.size(), 50000, 4);
  ASSERT_GT(2 * plan.splitters.size(), 65534u);
  std::vector<uint32_t> out(keys.size());
  const std::vector<std::size_t> bounds = cpu::PartitionByBuckets(
      plan, std::as_bytes(std::span(keys)), std::as_writable_bytes(std::span(out)), keys.size(), 2);
  for (std::size_t b = 0; b + 1 < bounds.size(); ++b) std::sort(out.begin() + bounds[b], out.begin() + bounds[b + 1]);
  EXPECT_TRUE(SameBits(out, ReferenceSort(keys, SortOrder::kAscending)));
}

// The input as shared memory its owner rewrites during the partition (each key read twice: counted,
// then placed): never a write outside the output (ASan watches this binary in the sanitizer run), the
// bounds still cover the whole array, and every output byte is written: no scratch contents show. (A
// deliberate race, as SharedMemoryRace's: this binary is not in the ThreadSanitizer run.)
TEST(SortInBuckets, InputRewrittenDuringThePartitionStaysInsideTheOutput) {
  std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 1 << 20, 13);
  const cpu::BucketPlan plan =
      cpu::SampleSplitters(DType::kUInt32, false, std::as_bytes(std::span(keys)), keys.size(), 16);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    uint32_t x = 1;
    while (!stop.load(std::memory_order_relaxed)) {
      for (std::size_t i = 0; i < keys.size(); i += 61) {
        x = x * 1664525u + 1013904223u;
        __atomic_store_n(&keys[i], x, __ATOMIC_RELAXED);
      }
    }
  });
  constexpr uint32_t kStale = 0xA5A5A5A5u;  // what the output held before: must not survive
  for (int round = 0; round < 20; ++round) {
    std::vector<uint32_t> out(keys.size(), kStale);
    const std::vector<std::size_t> bounds = cpu::PartitionByBuckets(
        plan, std::as_bytes(std::span(keys)), std::as_writable_bytes(std::span(out)), keys.size(), 2);
    ASSERT_EQ(bounds.front(), 0u);
    ASSERT_EQ(bounds.back(), keys.size());
    std::size_t stale = 0;
    for (uint32_t v : out) stale += v == kStale;
    // A rewritten key may be kStale itself by chance; far fewer than one in a thousand.
    EXPECT_LT(stale, keys.size() / 1000) << "round " << round;
  }
  stop = true;
  writer.join();
}

}  // namespace
}  // namespace gpusort::testing
