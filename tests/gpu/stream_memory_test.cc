// The memory each stream keeps for its jobs (StreamSlot::kept, DeviceContext::AllocateForJob): a job's
// buffers are borrowed from its slot's block where they fit, the block grows between jobs, a job that
// outgrows it mid-way or is larger than the cap takes the pool's memory, none is kept under a memory
// limit, and answers stay exact while many threads reuse the blocks with sizes that force every case.
// Skips when no GPU is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "gpusort/kernels/runtime.h"
#include "server/backend/cuda/cuda_engine.h"
#include "server/backend/cuda/device_context.h"
#include "tests/gpu/backends.h"

namespace gpusort {
namespace {

using gpusort::testing::Bytes;
using gpusort::testing::Cpu;

std::unique_ptr<DeviceContext> Context(DeviceContextOptions options) {
  std::string why;
  if (kernels::CountDevices(&why) == 0) return nullptr;
  auto context = DeviceContext::Create(options);
  return context.ok() ? std::move(*context) : nullptr;
}

bool Inside(const kernels::DeviceAllocation& block, const kernels::DeviceAllocation& buffer) {
  const auto* begin = static_cast<const std::byte*>(block.data());
  const auto* at = static_cast<const std::byte*>(buffer.data());
  return block.data() != nullptr && at >= begin && at + buffer.size() <= begin + block.size();
}

TEST(StreamMemory, AJobBorrowsItsBuffersFromItsSlotsBlockAndTheNextJobReusesIt) {
  std::unique_ptr<DeviceContext> context = Context({.ordinal = 0, .streams = 1});
  if (context == nullptr) GTEST_SKIP() << "no usable GPU";
  const std::size_t kept_before = context->KeptOnDevice();  // other contexts' blocks on the GPU, if any
  const void* first = nullptr;
  std::uint64_t used_after_first = 0;
  for (int job = 0; job < 3; ++job) {
    DeviceContext::Lease lease = context->Acquire();
    StreamSlot& slot = lease.slot();
    std::vector<kernels::DeviceAllocation> a, b;
    ASSERT_TRUE(context->AllocateForJob(slot, {1000, 0, 5000}, &a).ok());
    ASSERT_TRUE(context->AllocateForJob(slot, {300}, &b).ok());  // a second call of the same job
    ASSERT_EQ(a.size(), 3u);
    EXPECT_EQ(a[1].data(), nullptr);  // a buffer the request does not use, as the pool gives it
    for (const kernels::DeviceAllocation* buffer : {&a[0], &a[2], &b[0]}) {
      EXPECT_TRUE(Inside(slot.kept, *buffer));
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer->data()) % 256, 0u);
    }
    EXPECT_GE(static_cast<const std::byte*>(a[2].data()), static_cast<const std::byte*>(a[0].data()) + 1000);
    EXPECT_GE(static_cast<const std::byte*>(b[0].data()), static_cast<const std::byte*>(a[2].data()) + 5000);
    ASSERT_TRUE(slot.stream.Synchronize().ok());
    if (job == 0) {
      first = a[0].data();
      used_after_first = context->pool().Counters().used_bytes;
    }
    EXPECT_EQ(a[0].data(), first) << "job " << job << ": the block was not reused";
    EXPECT_EQ(context->KeptOnDevice() - kept_before, slot.kept.size());
    // Borrowed buffers are never freed by their holders, and reuse takes nothing more from the pool.
    EXPECT_EQ(context->pool().Counters().used_bytes, used_after_first) << "job " << job;
  }
}

TEST(StreamMemory, AJobThatOutgrowsTheBlockTakesThePoolAndTheNextJobGetsABiggerOne) {
  std::unique_ptr<DeviceContext> context = Context({.ordinal = 0, .streams = 1});
  if (context == nullptr) GTEST_SKIP() << "no usable GPU";
  const std::size_t mib = std::size_t{1} << 20;
  {
    DeviceContext::Lease lease = context->Acquire();
    std::vector<kernels::DeviceAllocation> small, more;
    ASSERT_TRUE(context->AllocateForJob(lease.slot(), {mib / 2}, &small).ok());
    EXPECT_EQ(lease.slot().kept.size(), mib);  // the smallest block
    ASSERT_TRUE(context->AllocateForJob(lease.slot(), {2 * mib}, &more).ok());
    EXPECT_TRUE(Inside(lease.slot().kept, small[0]));
    EXPECT_FALSE(Inside(lease.slot().kept, more[0])) << "the block grew under a buffer the job still holds";
    EXPECT_EQ(lease.slot().kept.size(), mib);
  }
  DeviceContext::Lease lease = context->Acquire();
  std::vector<kernels::DeviceAllocation> both;
  ASSERT_TRUE(context->AllocateForJob(lease.slot(), {mib / 2, 2 * mib}, &both).ok());
  EXPECT_EQ(lease.slot().kept.size(), 4 * mib);  // what the last job wanted, to a power of two
  EXPECT_TRUE(Inside(lease.slot().kept, both[0]));
  EXPECT_TRUE(Inside(lease.slot().kept, both[1]));
}

TEST(StreamMemory, AJobLargerThanTheCapOrUnderAMemoryLimitTakesThePool) {
  const std::size_t mib = std::size_t{1} << 20;
  for (const DeviceContextOptions& options :
       {DeviceContextOptions{.ordinal = 0, .streams = 1, .kept_block_bytes = 2 * mib},
        DeviceContextOptions{.ordinal = 0, .streams = 1, .memory_limit_bytes = 256 * mib},
        DeviceContextOptions{.ordinal = 0, .streams = 1, .kept_block_bytes = 0}}) {
    std::unique_ptr<DeviceContext> context = Context(options);
    if (context == nullptr) GTEST_SKIP() << "no usable GPU";
    const std::size_t kept_before = context->KeptOnDevice();
    DeviceContext::Lease lease = context->Acquire();
    std::vector<kernels::DeviceAllocation> buffers;
    const std::size_t bytes = options.kept_block_bytes == 2 * mib ? 3 * mib : mib;
    ASSERT_TRUE(context->AllocateForJob(lease.slot(), {bytes}, &buffers).ok());
    EXPECT_NE(buffers[0].data(), nullptr);
    EXPECT_EQ(lease.slot().kept.data(), nullptr);
    EXPECT_EQ(context->KeptOnDevice(), kept_before);
  }
}

// The metric's split: pool_used falls back to 0 once the requests are answered, the blocks show apart.
TEST(StreamMemory, PoolUsedLeavesOutTheKeptBlocks) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeCudaEngine({.streams = 2});
  ASSERT_TRUE(engine.ok());
  std::vector<std::uint32_t> keys(100000);
  std::iota(keys.begin(), keys.end(), 0u);
  std::reverse(keys.begin(), keys.end());
  std::vector<std::byte> bytes = Bytes(keys);
  ExecutionReport report;
  ASSERT_TRUE(RunSort(*(*engine), {.dtype = DType::kUInt32}, {.count = keys.size(), .keys = bytes}, Cancellation(), report)
                  .ok());
  double pool_used = -1, kept = -1;
  for (const Backend::MemoryReading& m : (*engine)->memory()) {
    if (m.kind == "pool_used") pool_used = m.bytes;
    if (m.kind == "stream_kept") kept = m.bytes;
  }
  EXPECT_EQ(pool_used, 0);
  EXPECT_GE(kept, 100000.0 * sizeof(std::uint32_t));
}

// Many threads, few streams, a small cap: jobs borrow, grow the blocks, outgrow them mid-way and go past
// the cap, each answer checked against the CPU engine.
TEST(StreamMemory, AnswersStayExactWhileThreadsReuseTheBlocks) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeCudaEngine({.streams = 3, .stream_memory_bytes = std::size_t{4} << 20});
  ASSERT_TRUE(engine.ok());
  std::vector<std::thread> threads;
  std::vector<int> wrong(6, 0), failed(6, 0);
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      for (int i = 0; i < 40; ++i) {
        const std::size_t n = std::size_t{1} << std::uniform_int_distribution<int>(4, 20)(rng);
        const std::size_t count = n + std::uniform_int_distribution<std::size_t>(0, n)(rng) - n / 2;
        const bool wide = rng() % 2 == 0;
        const DType dtype = wide ? DType::kInt64 : DType::kFloat32;
        std::vector<std::byte> keys(count * (wide ? 8 : 4));
        for (std::byte& b : keys) b = static_cast<std::byte>(rng());
        if (!wide) {  // finite floats: NaN payloads order by their bits on both engines, but keep it plain
          auto* f = reinterpret_cast<float*>(keys.data());
          for (std::size_t j = 0; j < count; ++j) f[j] = static_cast<float>(static_cast<std::int32_t>(rng())) / 7.0f;
        }
        const bool topk = i % 3 == 0 && count >= 100;
        std::vector<std::byte> expected = keys;
        std::vector<std::int64_t> positions(topk ? 100 : count), expected_positions(positions.size());
        ExecutionReport report, cpu_report;
        absl::Status status, cpu_status;
        if (topk) {
          const TopKSpec spec{.dtype = dtype, .k = 100, .largest = true};
          std::vector<std::byte> values(100 * (wide ? 8 : 4)), expected_values(values.size());
          status = RunTopK(*(*engine), spec, {.count = count, .keys = keys, .values_out = values, .indices_out = positions}, Cancellation(), report);
          cpu_status = RunTopK(*Cpu(), spec, {.count = count, .keys = keys, .values_out = expected_values,
                                          .indices_out = expected_positions}, Cancellation(), cpu_report);
          if (values != expected_values) ++wrong[t];
        } else {
          const SortSpec spec{.dtype = dtype, .payload = SortPayload::kIndices};
          status = RunSort(*(*engine), spec, {.count = count, .keys = keys, .indices_out = positions}, Cancellation(), report);
          cpu_status = RunSort(*Cpu(), spec, {.count = count, .keys = expected, .indices_out = expected_positions}, Cancellation(), cpu_report);
          if (keys != expected) ++wrong[t];
        }
        if (!status.ok() || !cpu_status.ok()) ++failed[t];
        if (positions != expected_positions) ++wrong[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 6; ++t) {
    EXPECT_EQ(failed[t], 0) << "thread " << t;
    EXPECT_EQ(wrong[t], 0) << "thread " << t;
  }
}

}  // namespace
}  // namespace gpusort
