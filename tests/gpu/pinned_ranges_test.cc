// The CUDA engine's shared-memory forms (Sort and TopK jobs in Memory::kRegisteredHost) on memory registered as a
// region is (PinHostMemory on page-aligned mappings of their own), against the CPU backend's answer:
// every dtype, the adversarial patterns, sizes off powers of two, rows, every TopK output. The keys
// cross by DMA from the registered range and the results straight back into registered ranges, so
// these check what the staged paths' tests (cuda_backend_test) cannot: the registered ends. Skips when
// no GPU is usable.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpusort/kernels/radix_sort.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/backend/cuda/cuda_engine.h"
#include "server/backend/cuda/device_context.h"
#include "server/backend/cuda/gpu_job.h"
#include "server/backend/cuda/split_upload_sort_job.h"
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
using gpusort::testing::PatternName;

// Bytes on pages of their own, registered with the CUDA engine as a shared-memory region is. (Two
// std::vectors may share a page, and CUDA refuses to register a page twice.) Filled with `fill`.
class RegisteredBytes {
 public:
  RegisteredBytes(std::size_t bytes, std::byte fill) : bytes_(bytes), mapped_(std::max<std::size_t>(bytes, 1)) {
    void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      ADD_FAILURE() << "mmap of " << mapped_ << " bytes";
      return;
    }
    data_ = static_cast<std::byte*>(p);
    std::fill_n(data_, mapped_, fill);
    auto pin = Cuda()->PinHostMemory(std::span(data_, mapped_));
    if (!pin.ok()) {
      ADD_FAILURE() << "registering: " << pin.status();
      return;
    }
    pin_ = std::move(*pin);
  }
  RegisteredBytes(const RegisteredBytes&) = delete;
  RegisteredBytes& operator=(const RegisteredBytes&) = delete;
  ~RegisteredBytes() {
    pin_.reset();  // unregistered before unmapped
    if (data_ != nullptr) munmap(data_, mapped_);
  }
  std::span<std::byte> span() const { return data_ == nullptr ? std::span<std::byte>() : std::span(data_, bytes_); }
  std::vector<std::byte> copy() const { return std::vector<std::byte>(span().begin(), span().end()); }

 private:
  std::size_t bytes_, mapped_;
  std::byte* data_ = nullptr;
  std::unique_ptr<HostMemoryPin> pin_;
};

struct TopKResult {
  absl::Status status;
  std::vector<std::byte> values;
  std::vector<std::int64_t> indices;
};

// TopK on the CPU backend from ordinary memory: the reference.
TopKResult CpuTopK(const TopKSpec& spec, const std::vector<std::byte>& keys) {
  TopKResult out;
  TopKBuffers buffers;
  buffers.count = keys.size() / ElementSize(spec.dtype);
  buffers.keys = keys;
  if (spec.wants_values()) {
    out.values.assign(spec.results() * ElementSize(spec.dtype), std::byte{0xAB});
    buffers.values_out = out.values;
  }
  if (spec.wants_indices()) {
    out.indices.assign(spec.results(), -7);
    buffers.indices_out = out.indices;
  }
  ExecutionReport report;
  out.status = RunTopK(*Cpu(), spec, buffers, Cancellation(), report);
  return out;
}

// A TopK in registered memory on the CUDA engine, every array in a registered range of its own; the outputs start
// poisoned, so every byte of them must be written.
TopKResult PinnedTopK(const TopKSpec& spec, const std::vector<std::byte>& keys) {
  const RegisteredBytes in(keys.size(), std::byte{0});
  if (!keys.empty()) std::memcpy(in.span().data(), keys.data(), keys.size());
  const RegisteredBytes values(spec.wants_values() ? spec.results() * ElementSize(spec.dtype) : 0, std::byte{0xAB});
  const RegisteredBytes indices(spec.wants_indices() ? spec.results() * sizeof(std::int64_t) : 0, std::byte{0xF9});
  TopKBuffers buffers;
  buffers.count = keys.size() / ElementSize(spec.dtype);
  buffers.keys = in.span();
  buffers.values_out = values.span();
  const std::span<std::byte> index_bytes = indices.span();
  buffers.indices_out = std::span(reinterpret_cast<std::int64_t*>(index_bytes.data()), spec.wants_indices() ? spec.results() : 0);
  TopKResult out;
  ExecutionReport report;
  out.status = RunTopK(*Cuda(), spec, buffers, Cancellation(), report, Memory::kRegisteredHost);
  if (spec.wants_values()) out.values = values.copy();
  if (spec.wants_indices()) {
    out.indices.resize(spec.results());
    std::memcpy(out.indices.data(), index_bytes.data(), index_bytes.size());
  }
  // A named kernel must run on the GPU; AUTO may answer a small array on the CPU.
  if (out.status.ok() && spec.algorithm != Algorithm::kAuto && report.backend != BackendKind::kCuda) {
    out.status = absl::InternalError("not run on the GPU");
  }
  return out;
}

template <typename T>
class PinnedRanges : public ::testing::Test {};
using AllKeyTypes = ::testing::Types<int32_t, uint32_t, int64_t, uint64_t, float, double, Float16, BFloat16, int16_t,
                                     uint16_t, int8_t, uint8_t>;
TYPED_TEST_SUITE(PinnedRanges, AllKeyTypes);

// Sorted results with the smaller-index tie rule are unique, so the answers compare byte for byte.
TYPED_TEST(PinnedRanges, TopKMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  using T = TypeParam;
  struct Shape {
    std::size_t rows, row_length;
  };
  for (Pattern pattern : kAllPatterns) {
    for (Shape shape : {Shape{1, 1}, Shape{1, 4097}, Shape{1, (std::size_t{1} << 20) + 3}, Shape{16, 1025}}) {
      const std::size_t n = shape.rows * shape.row_length, m = shape.row_length;
      const std::vector<std::byte> keys = Bytes(MakeInput<T>(pattern, n, n + 9));
      for (Algorithm algorithm : {Algorithm::kAuto, Algorithm::kRadix, Algorithm::kRadixSelect, Algorithm::kSmallK}) {
        for (std::size_t k : {std::size_t{1}, std::min<std::size_t>(100, m)}) {
          for (bool largest : {true, false}) {
            for (TopKOutput output : {TopKOutput::kValuesAndIndices, TopKOutput::kValues, TopKOutput::kIndices}) {
              TopKSpec spec{.dtype = DTypeOf<T>::value, .k = k, .largest = largest, .output = output,
                            .rows = shape.rows, .algorithm = algorithm};
              const std::string what = std::string(AlgorithmName(algorithm)) + " " + PatternName(pattern) +
                                       " rows=" + std::to_string(shape.rows) + " m=" + std::to_string(m) +
                                       " k=" + std::to_string(k) + (largest ? " largest" : " smallest") +
                                       " output=" + std::to_string(static_cast<int>(output));
              const TopKResult gpu = PinnedTopK(spec, keys);
              TopKSpec reference = spec;
              reference.algorithm = Algorithm::kAuto;
              const TopKResult cpu = CpuTopK(reference, keys);
              ASSERT_TRUE(gpu.status.ok()) << what << ": " << gpu.status;
              ASSERT_TRUE(cpu.status.ok()) << what << ": " << cpu.status;
              ASSERT_TRUE(gpu.values == cpu.values) << what << ": values differ";
              ASSERT_TRUE(gpu.indices == cpu.indices) << what << ": indices differ";
            }
          }
        }
      }
    }
  }
}

// A Sort in registered memory from one registered range into another (a region request's separate output range), keys
// alone and with indices, against the CPU's stable sort.
TYPED_TEST(PinnedRanges, SortMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  using T = TypeParam;
  for (Pattern pattern : kAllPatterns) {
    // From 4M keys (kSplitUploadMinKeys) 4- and 8-byte keys alone take the split upload (split_upload_sort_job.h).
    for (std::size_t n : {std::size_t{1}, std::size_t{4097}, (std::size_t{1} << 20) + 5, std::size_t{1} << 22,
                          (std::size_t{1} << 22) + 5}) {
      const std::vector<std::byte> keys = Bytes(MakeInput<T>(pattern, n, n + 3));
      for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
        for (SortPayload payload : {SortPayload::kNone, SortPayload::kIndices}) {
          const SortSpec spec{.dtype = DTypeOf<T>::value, .order = order, .stable = true, .payload = payload,
                              .algorithm = Algorithm::kRadix};
          const std::string what = PatternName(pattern) + " n=" + std::to_string(n) +
                                   (order == SortOrder::kAscending ? " asc" : " desc") +
                                   (payload == SortPayload::kIndices ? " indices" : "");
          const RegisteredBytes in(keys.size(), std::byte{0});
          std::memcpy(in.span().data(), keys.data(), keys.size());
          const RegisteredBytes out(keys.size(), std::byte{0xAB});
          const bool indices = payload == SortPayload::kIndices;
          const RegisteredBytes index_out(indices ? n * sizeof(std::int64_t) : 0, std::byte{0xF9});
          SortBuffers buffers{.count = n,
                              .keys = out.span(),
                              .indices_out = std::span(reinterpret_cast<std::int64_t*>(index_out.span().data()),
                                                       indices ? n : 0)};
          ExecutionReport report;
          const absl::Status status = RunSort(*Cuda(), spec, buffers, Cancellation(), report, Memory::kRegisteredHost, in.span());
          ASSERT_TRUE(status.ok()) << what << ": " << status;
          EXPECT_EQ(report.algorithm, Algorithm::kRadix) << what;
          // The reference: the CPU's stable sort of a copy.
          std::vector<std::byte> cpu_keys = keys;
          std::vector<std::int64_t> cpu_indices(indices ? n : 0, -7);
          SortSpec reference = spec;
          reference.algorithm = Algorithm::kAuto;
          SortBuffers cpu_buffers{.count = n, .keys = cpu_keys, .indices_out = cpu_indices};
          ExecutionReport cpu_report;
          ASSERT_TRUE(RunSort(*Cpu(), reference, cpu_buffers, Cancellation(), cpu_report).ok()) << what;
          ASSERT_TRUE(out.copy() == cpu_keys) << what << ": keys differ";
          if (indices) {
            std::vector<std::int64_t> gpu_indices(n);
            std::memcpy(gpu_indices.data(), index_out.span().data(), n * sizeof(std::int64_t));
            ASSERT_TRUE(gpu_indices == cpu_indices) << what << ": indices differ";
          }
          ASSERT_TRUE(std::equal(keys.begin(), keys.end(), in.span().begin())) << what << ": the input was written";
        }
      }
    }
  }
}

// 4M u64 keys between registered ranges under a device memory limit. The split upload
// (split_upload_sort_job.h) needs the keys twice and CUB's scratch for two thirds of them, which for
// 8-byte keys holds a copy (the sort keeps its input); the plain job needs the keys twice and a smaller
// scratch. Just under the split's need, the job alone is refused with nothing allocated, and an engine
// with that limit still answers (by the plain job); with room, the job alone answers. Every answer is the
// CPU's.
TEST(PinnedRangesLimits, SplitUploadOverTheMemoryLimitFallsBackToThePlainSort) {
  SKIP_WITHOUT_GPU();
  const std::size_t n = std::size_t{1} << 22, bytes = n * sizeof(std::uint64_t);
  kernels::RadixSortArgs plain_sizing{.key_width = kernels::KeyWidth::k64, .count = n, .end_bit = 64};
  kernels::RadixSortArgs split_sizing = plain_sizing;
  split_sizing.count = n - n / 3;
  split_sizing.keep_input = true;
  std::size_t plain_temp = 0, split_temp = 0;
  ASSERT_TRUE(kernels::RadixSortTempBytes(plain_sizing, &plain_temp).ok());
  ASSERT_TRUE(kernels::RadixSortTempBytes(split_sizing, &split_temp).ok());
  const std::size_t split_need = 2 * bytes + split_temp + 32, plain_need = 2 * bytes + plain_temp + 16;
  // Slack for the pool's rounding of each allocation.
  if (plain_need + (std::size_t{8} << 20) >= split_need) GTEST_SKIP() << "the split needs no more than the plain job";
  const std::vector<std::byte> keys = Bytes(MakeInput<std::uint64_t>(Pattern::kRandom, n, 42));
  std::vector<std::byte> want = keys;
  const SortSpec spec{.dtype = DType::kUInt64};
  ASSERT_TRUE(SplitUploadSortJob::Takes(spec, n));
  SortBuffers cpu_buffers{.count = n, .keys = want};
  ExecutionReport cpu_report;
  ASSERT_TRUE(RunSort(*Cpu(), spec, cpu_buffers, Cancellation(), cpu_report).ok());
  const RegisteredBytes in(keys.size(), std::byte{0});
  std::memcpy(in.span().data(), keys.data(), keys.size());
  for (const bool room : {false, true}) {
    const std::size_t limit = room ? split_need + (std::size_t{16} << 20) : split_need - 1;
    const std::string what = "limit " + std::to_string(limit);
    auto context = DeviceContext::Create({.memory_limit_bytes = limit});
    ASSERT_TRUE(context.ok()) << what << ": " << context.status();
    const RegisteredBytes out(keys.size(), std::byte{0xAB});
    SplitUploadSortJob job(spec, in.span(), out.span(), n, /*parts=*/2);
    ExecutionReport report;
    const absl::Status status = RunGpuJob(**context, job, Cancellation(), report);
    if (room) {
      ASSERT_TRUE(status.ok()) << what << ": " << status;
      EXPECT_TRUE(job.allocated()) << what;
      EXPECT_TRUE(out.copy() == want) << what;
      continue;
    }
    EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << what << ": " << status;
    EXPECT_FALSE(job.allocated()) << what;
    // The engine with the same limit: the split is refused, and the plain job answers.
    auto engine = MakeCudaEngine({.memory_limit_bytes = limit});
    ASSERT_TRUE(engine.ok()) << what << ": " << engine.status();
    SortBuffers buffers{.count = n, .keys = out.span()};
    const absl::Status served = RunSort(*(*engine), spec, buffers, Cancellation(), report, Memory::kRegisteredHost, in.span());
    ASSERT_TRUE(served.ok()) << what << ": " << served;
    EXPECT_TRUE(out.copy() == want) << what;
  }
}

// The split upload in three parts (what the engine takes from kThreePartsMinKeys, 16M keys), run here at
// 4M keys: the second part merges into the first's sorted keys, the third sorts where it landed (its
// answer copied back beside the prefix when CUB's passes end in the second buffer: an odd number of
// passes, as narrow keys give), then the last merge. Every 4- and 8-byte dtype, both orders, the
// adversarial patterns, against the CPU's sort; and two parts beside it on the same keys.
template <typename T>
void ExpectSplitUploadMatchesTheCpu(int parts) {
  for (Pattern pattern : kAllPatterns) {
    for (std::size_t n : {std::size_t{1} << 22, (std::size_t{1} << 22) + 7}) {
      const std::vector<std::byte> keys = Bytes(MakeInput<T>(pattern, n, n + 11));
      for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
        const SortSpec spec{.dtype = DTypeOf<T>::value, .order = order};
        const std::string what = std::string(DTypeName(spec.dtype)) + " " + PatternName(pattern) +
                                 " n=" + std::to_string(n) + (order == SortOrder::kAscending ? " asc" : " desc") +
                                 " parts=" + std::to_string(parts);
        ASSERT_TRUE(SplitUploadSortJob::Takes(spec, n)) << what;
        std::vector<std::byte> want = keys;
        SortBuffers cpu_buffers{.count = n, .keys = want};
        ExecutionReport cpu_report;
        ASSERT_TRUE(RunSort(*Cpu(), spec, cpu_buffers, Cancellation(), cpu_report).ok()) << what;
        const RegisteredBytes in(keys.size(), std::byte{0});
        std::memcpy(in.span().data(), keys.data(), keys.size());
        const RegisteredBytes out(keys.size(), std::byte{0xAB});
        static auto context = DeviceContext::Create({.streams = 1});
        ASSERT_TRUE(context.ok()) << context.status();
        SplitUploadSortJob job(spec, in.span(), out.span(), n, parts);
        ASSERT_EQ(job.parts(), parts) << what;
        ExecutionReport report;
        const absl::Status status = RunGpuJob(**context, job, Cancellation(), report);
        ASSERT_TRUE(status.ok()) << what << ": " << status;
        ASSERT_TRUE(out.copy() == want) << what << ": keys differ";
      }
    }
  }
}

TEST(PinnedRangesSplitUpload, ThreePartsAndTwoMatchTheCpuForEveryWideDtype) {
  SKIP_WITHOUT_GPU();
  EXPECT_EQ(SplitUploadSortJob::PartsFor(kThreePartsMinKeys - 1), 2);
  EXPECT_EQ(SplitUploadSortJob::PartsFor(kThreePartsMinKeys), 3);
  for (int parts : {3, 2}) {
    ExpectSplitUploadMatchesTheCpu<std::uint32_t>(parts);
    ExpectSplitUploadMatchesTheCpu<std::int32_t>(parts);
    ExpectSplitUploadMatchesTheCpu<float>(parts);
    ExpectSplitUploadMatchesTheCpu<std::uint64_t>(parts);
    ExpectSplitUploadMatchesTheCpu<std::int64_t>(parts);
    ExpectSplitUploadMatchesTheCpu<double>(parts);
  }
}

}  // namespace
}  // namespace gpusort
