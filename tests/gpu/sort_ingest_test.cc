// The CUDA backend's streamed sort (SortIngest: keys handed over in pieces, copied to the GPU as they come,
// read back in runs) against the CPU backend's unary sort, bit for bit: every dtype, both orders, keys
// and argsort, on the adversarial patterns, in pieces of odd sizes, and on both sides of the size where
// the ingest moves from the host to the GPU. Skips when no GPU is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/backend/cpu/cpu_backend.h"
#include "server/backend/auto_policy.h"
#include "server/backend/cuda_backend.h"
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

struct Answer {
  std::vector<std::byte> keys;
  std::vector<int64_t> indices;
  ExecutionReport report;
};

// Feeds `keys` to an ingest in pieces of `piece` keys, sorts, and reads the answer back in runs of
// `run` keys.
absl::Status Streamed(const SortSpec& spec, const std::vector<std::byte>& keys, std::size_t piece,
                      std::size_t run, Answer* out) {
  std::unique_ptr<SortIngest> ingest = Cuda()->StartSortIngest(spec);
  if (ingest == nullptr) return absl::InternalError("no ingest for this spec");
  const std::size_t width = ElementSize(spec.dtype);
  const std::size_t n = keys.size() / width;
  for (std::size_t i = 0; i < n; i += piece) {
    const std::size_t take = std::min(piece, n - i);
    absl::Status s = ingest->Append(std::span(keys).subspan(i * width, take * width));
    if (!s.ok()) return s;
  }
  Cancellation cancellation;
  absl::Status s = ingest->Sort(cancellation, out->report);
  if (!s.ok()) return s;
  out->keys.assign(keys.size(), std::byte{0xAB});
  const bool indices = spec.payload == SortPayload::kIndices;
  if (indices) out->indices.assign(n, -7);
  for (std::size_t i = 0; i < n; i += run) {
    const std::size_t end = std::min(n, i + run);
    s = ingest->Read(i, end, out->keys.data() + i * width, indices ? out->indices.data() + i : nullptr);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

Answer OnCpu(SortSpec spec, const std::vector<std::byte>& keys) {
  Answer out;
  out.keys = keys;
  const std::size_t n = keys.size() / ElementSize(spec.dtype);
  SortBuffers buffers;
  buffers.count = n;
  buffers.keys = out.keys;
  if (spec.payload == SortPayload::kIndices) {
    out.indices.assign(n, -7);
    buffers.indices_out = out.indices;
  }
  spec.algorithm = Algorithm::kAuto;
  spec.stable = true;  // the GPU's radix sort is stable, so its positions are the stable ones
  Cancellation cancellation;
  EXPECT_TRUE(RunSort(*Cpu(), spec, buffers, cancellation, out.report).ok());
  return out;
}

template <typename T>
class SortIngestVsCpu : public ::testing::Test {};
using AllKeyTypes = ::testing::Types<int32_t, uint32_t, int64_t, uint64_t, float, double, Float16, BFloat16, int16_t,
                                     uint16_t, int8_t, uint8_t>;
TYPED_TEST_SUITE(SortIngestVsCpu, AllKeyTypes);

TYPED_TEST(SortIngestVsCpu, PiecesOfOddSizesOnEveryPattern) {
  SKIP_WITHOUT_GPU();
  using T = TypeParam;
  // Below, at and above the host-to-GPU switch, and large enough that the device buffer grows twice.
  const std::size_t sizes[] = {0, 1, kAutoSortCpuBelowKeys - 1, kAutoSortCpuBelowKeys, (std::size_t{3} << 20) + 7};
  for (Pattern pattern : kAllPatterns) {
    for (std::size_t n : sizes) {
      const std::vector<std::byte> keys = Bytes(MakeInput<T>(pattern, n, n + 3));
      for (SortOrder order : {SortOrder::kAscending, SortOrder::kDescending}) {
        for (SortPayload payload : {SortPayload::kNone, SortPayload::kIndices}) {
          SortSpec spec;
          spec.dtype = DTypeOf<T>::value;
          spec.order = order;
          spec.payload = payload;
          spec.stable = true;
          const std::string what = PatternName(pattern) + " n=" + std::to_string(n) +
                                   (order == SortOrder::kAscending ? " asc" : " desc") +
                                   (payload == SortPayload::kIndices ? " argsort" : " keys");
          Answer gpu;
          absl::Status s = Streamed(spec, keys, 4093, 10007, &gpu);
          ASSERT_TRUE(s.ok()) << what << ": " << s;
          const Answer cpu = OnCpu(spec, keys);
          ASSERT_TRUE(gpu.keys == cpu.keys) << what << ": keys differ";
          ASSERT_TRUE(gpu.indices == cpu.indices) << what << ": indices differ";
          const bool on_gpu = n >= kAutoSortCpuBelowKeys;
          EXPECT_EQ(gpu.report.backend.value_or(BackendKind::kCuda),
                    on_gpu ? BackendKind::kCuda : BackendKind::kCpu)
              << what;
        }
      }
    }
  }
}

TEST(SortIngest, ValuesAndCpuByNameKeepTheCollectingPath) {
  SKIP_WITHOUT_GPU();
  SortSpec values;
  values.payload = SortPayload::kValues;
  values.value_width = 4;
  EXPECT_EQ(Cuda()->StartSortIngest(values), nullptr);
  SortSpec cpu;
  cpu.algorithm = Algorithm::kCpu;
  EXPECT_EQ(Cuda()->StartSortIngest(cpu), nullptr);
}

TEST(SortIngest, ManyStreamsAtOnceKeepTheirOwnKeys) {
  SKIP_WITHOUT_GPU();
  // More concurrent ingests than the backend has stream slots: pieces interleave on shared slots.
  constexpr int kStreams = 12;
  std::vector<std::vector<std::byte>> inputs;
  for (int i = 0; i < kStreams; ++i) {
    inputs.push_back(Bytes(MakeInput<uint32_t>(Pattern::kRandom, 200000 + i * 1001, i)));
  }
  std::vector<absl::Status> status(kStreams);
  std::vector<Answer> answers(kStreams);
  std::vector<std::thread> threads;
  SortSpec spec;
  spec.payload = SortPayload::kIndices;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] { status[i] = Streamed(spec, inputs[i], 30000 + i, 65536, &answers[i]); });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_TRUE(status[i].ok()) << status[i];
    const Answer cpu = OnCpu(spec, inputs[i]);
    EXPECT_TRUE(answers[i].keys == cpu.keys) << "stream " << i;
    EXPECT_TRUE(answers[i].indices == cpu.indices) << "stream " << i;
  }
}

}  // namespace
}  // namespace gpusort
