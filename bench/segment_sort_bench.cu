// kernels::SegmentSort (segments by offsets, issue 16) beside CUB's segmented sorts on the same offsets
// and keys, device time only, on the shared harness (cuda_bench_harness.cuh).
//
// Cases (uint32 keys, uniform random from a fixed seed):
//   seg_65536_uniform_1_512   65536 segments with lengths uniform in 1..512 (issue 16's shape, ~16.8M keys)
//   seg_rows_65536x256        65536 segments of 256 keys: the equal rows of Sort's `rows`
//   seg_mixed_long            4096 segments uniform in 1..512 and 16 of 100000 keys (the CUB part too)
// Methods:
//   gpusort_segment_sort      SegmentSort: buckets the segments by tile size on the device, sorts those
//                             of up to 4096 keys as bitonic tiles and longer ones by CUB, with positions
//                             (stable): what the engine runs for a Sort of segments. Its host part,
//                             PlanSegmentSort (one pass over the offsets), is timed on its own line.
//   cub_segmented_sort_keys   cub::DeviceSegmentedSort::SortKeys (the issue's anchor), keys only
//   cub_segmented_stable_pairs cub::DeviceSegmentedSort::StableSortPairs with uint32 positions (like for like)
//   cub_segmented_radix_keys  cub::DeviceSegmentedRadixSort::SortKeys
//   gpusort_bitonic_rows      BitonicSortRows with positions (the rows case only)
// Timing: CUDA events around the call alone; the L2 flushed before each call; 3 warm-up calls, then
// --runs timed ones (default 20), median. Every method's keys are checked against cub_segmented_sort_keys'
// once, outside timing; gpusort's positions must point at their keys, inside their segment, increasing
// among equal keys (stable). A mismatch prints FAIL and the run exits 1.
//
//   build/bin/segment_sort_bench [--runs N]
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/cuda_bench_harness.cuh"
#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/segmented_sort.h"

namespace gk = gpusort::kernels;
using gpusort::bench::DeviceBuffer;
using gpusort::bench::Die;
using gpusort::bench::EventPool;
using gpusort::bench::L2Flusher;
using gpusort::bench::Median;

namespace {

struct Case {
  std::string name;
  std::vector<std::uint64_t> offsets;
  bool rows = false;  // equal segments: BitonicSortRows runs too
  std::size_t row_length = 0;
};

std::vector<std::uint64_t> UniformLengths(std::size_t segments, std::size_t low, std::size_t high, unsigned seed) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<std::size_t> length(low, high);
  std::vector<std::uint64_t> offsets = {0};
  for (std::size_t s = 0; s < segments; ++s) offsets.push_back(offsets.back() + length(random));
  return offsets;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  cases.push_back({"seg_65536_uniform_1_512", UniformLengths(65536, 1, 512, 16)});
  Case rows{"seg_rows_65536x256", {}, true, 256};
  for (std::size_t r = 0; r <= 65536; ++r) rows.offsets.push_back(r * 256);
  cases.push_back(rows);
  Case mixed{"seg_mixed_long", UniformLengths(4096, 1, 512, 17)};
  for (int i = 0; i < 16; ++i) mixed.offsets.push_back(mixed.offsets.back() + 100000);
  cases.push_back(mixed);
  return cases;
}

struct Method {
  std::string name;
  std::function<void(void* temp, std::size_t* bytes, cudaStream_t stream)> call;  // temp null: size query
  bool positions = false;
};

class Runner {
 public:
  Runner(const Case& c, const gk::Stream& stream, int runs)
      : case_(c), gk_stream_(&stream), stream_(static_cast<cudaStream_t>(stream.native())), runs_(runs) {
    n_ = c.offsets.back();
    segments_ = c.offsets.size() - 1;
    std::mt19937 random(7);
    host_keys_.resize(n_);
    for (auto& k : host_keys_) k = static_cast<std::uint32_t>(random());
    keys_in_ = DeviceBuffer(n_ * 4);
    keys_out_ = DeviceBuffer(n_ * 4);
    pos_[0] = DeviceBuffer(n_ * 4);
    pos_[1] = DeviceBuffer(n_ * 4);
    offsets64_ = DeviceBuffer((segments_ + 1) * 8);
    offsets32_ = DeviceBuffer((segments_ + 1) * 4);
    std::vector<int> offsets32(c.offsets.begin(), c.offsets.end());
    CUDA_CHECK(cudaMemcpy(keys_in_.get(), host_keys_.data(), n_ * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(offsets64_.get(), c.offsets.data(), (segments_ + 1) * 8, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(offsets32_.get(), offsets32.data(), (segments_ + 1) * 4, cudaMemcpyHostToDevice));
    // The host's part, as the engine runs it once per request before queueing anything: timed here on
    // its own (median of 20), since the device timings below leave it out.
    std::vector<double> plan_ms;
    for (int r = 0; r < 20; ++r) {
      const auto start = std::chrono::steady_clock::now();
      KERNELS_CHECK(gk::PlanSegmentSort(c.offsets.data(), segments_, gk::kBitonicRowsMaxLength, &plan_));
      plan_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::printf("%-26s %-28s segments=%-6zu host median %8.4f ms (tiles %zu, long %zu)\n", c.name.c_str(),
                "plan_segment_sort (host)", segments_, Median(plan_ms), plan_.tile_segments, plan_.long_segments);
  }

  std::vector<Method> Methods() {
    std::vector<Method> methods;
    auto* in = keys_in_.as<std::uint32_t>();
    auto* out = keys_out_.as<std::uint32_t>();
    auto* begin32 = offsets32_.as<int>();
    auto* begin64 = offsets64_.as<std::int64_t>();
    const auto n = static_cast<std::int64_t>(n_), s = static_cast<std::int64_t>(segments_);
    methods.push_back({"cub_segmented_sort_keys", [=](void* temp, std::size_t* bytes, cudaStream_t st) {
                         CUDA_CHECK(cub::DeviceSegmentedSort::SortKeys(temp, *bytes, in, out, n, s, begin32,
                                                                       begin32 + 1, st));
                       }});
    methods.push_back({"gpusort_segment_sort",
                       [=](void* temp, std::size_t* bytes, cudaStream_t) {
                         gk::SegmentSortArgs args;
                         args.count = n_;
                         args.segments = segments_;
                         args.offsets = begin64;
                         args.plan = &plan_;
                         // keys[0] is only read: the input stays as it is across calls.
                         args.keys[0] = const_cast<std::uint32_t*>(in);
                         args.keys[1] = out;
                         args.indices[0] = pos_[0].get();
                         args.indices[1] = pos_[1].get();
                         if (temp == nullptr) {
                           KERNELS_CHECK(gk::SegmentSortTempBytes(args, bytes));
                         } else {
                           int result = 0;
                           KERNELS_CHECK(gk::SegmentSort(args, temp, *bytes, *gk_stream_, &result));
                         }
                       },
                       true});
    auto* pos_in = pos_[0].as<std::uint32_t>();
    auto* pos_out = pos_[1].as<std::uint32_t>();
    methods.push_back({"cub_segmented_stable_pairs", [=](void* temp, std::size_t* bytes, cudaStream_t st) {
                         CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(
                             temp, *bytes, in, out, pos_in, pos_out, n, s, begin64, begin64 + 1, st));
                       }});
    methods.push_back({"cub_segmented_radix_keys", [=](void* temp, std::size_t* bytes, cudaStream_t st) {
                         CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortKeys(temp, *bytes, in, out, n, s, begin32,
                                                                            begin32 + 1, 0, 32, st));
                       }});
    if (case_.rows) {
      methods.push_back({"gpusort_bitonic_rows",
                         [=](void* temp, std::size_t* bytes, cudaStream_t) {
                           gk::KeyRowsArgs args;
                           args.rows = segments_;
                           args.row_length = case_.row_length;
                           args.keys = out;  // in place: the input is copied in before each call
                           args.positions = pos_out;
                           if (temp == nullptr) {
                             KERNELS_CHECK(gk::BitonicSortRowsTempBytes(args, bytes));
                           } else {
                             KERNELS_CHECK(gk::BitonicSortRows(args, temp, *bytes, *gk_stream_));
                           }
                         },
                         true});
    }
    return methods;
  }

  // Runs every method; false when one gave a wrong answer.
  bool Run(L2Flusher& flusher) {
    bool ok = true;
    std::vector<std::uint32_t> reference;
    double anchor_ms = 0;
    for (Method& m : Methods()) {
      std::size_t bytes = 0;
      m.call(nullptr, &bytes, stream_);
      DeviceBuffer temp(std::max<std::size_t>(bytes, 1));
      const bool in_place = m.name == "gpusort_bitonic_rows";
      auto once = [&] {
        if (in_place) CUDA_CHECK(cudaMemcpyAsync(keys_out_.get(), keys_in_.get(), n_ * 4, cudaMemcpyDeviceToDevice, stream_));
        m.call(temp.get(), &bytes, stream_);
      };
      once();
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      std::vector<std::uint32_t> got(n_);
      CUDA_CHECK(cudaMemcpy(got.data(), keys_out_.get(), n_ * 4, cudaMemcpyDeviceToHost));
      if (reference.empty()) {
        reference = got;
      } else if (got != reference) {
        std::printf("FAIL %s %s: keys differ from cub_segmented_sort_keys'\n", case_.name.c_str(), m.name.c_str());
        ok = false;
        continue;
      }
      if (m.positions && !PositionsHold(got, m.name == "gpusort_bitonic_rows")) {
        ok = false;
        continue;
      }
      EventPool events(2 * runs_);
      for (int w = 0; w < 3; ++w) once();
      for (int r = 0; r < runs_; ++r) {
        flusher.Enqueue(stream_);
        if (in_place) CUDA_CHECK(cudaMemcpyAsync(keys_out_.get(), keys_in_.get(), n_ * 4, cudaMemcpyDeviceToDevice, stream_));
        CUDA_CHECK(cudaEventRecord(events[2 * r], stream_));
        m.call(temp.get(), &bytes, stream_);
        CUDA_CHECK(cudaEventRecord(events[2 * r + 1], stream_));
      }
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      std::vector<double> ms(runs_);
      for (int r = 0; r < runs_; ++r) {
        float t = 0;
        CUDA_CHECK(cudaEventElapsedTime(&t, events[2 * r], events[2 * r + 1]));
        ms[r] = t;
      }
      const double median = Median(ms);
      if (anchor_ms == 0) anchor_ms = median;
      std::printf("%-26s %-28s n=%-9zu segments=%-6zu median %8.4f ms  (cub_segmented_sort_keys / this: %.2fx)\n",
                  case_.name.c_str(), m.name.c_str(), n_, segments_, median, anchor_ms / median);
    }
    return ok;
  }

 private:
  // Positions (global for segments, row-relative for rows) point at their keys, inside their segment,
  // and increase among equal keys.
  bool PositionsHold(const std::vector<std::uint32_t>& sorted, bool row_relative) {
    std::vector<std::uint32_t> pos(n_);
    CUDA_CHECK(cudaMemcpy(pos.data(), pos_[1].get(), n_ * 4, cudaMemcpyDeviceToHost));
    for (std::size_t s = 0; s < segments_; ++s) {
      const std::uint64_t begin = case_.offsets[s], end = case_.offsets[s + 1];
      for (std::uint64_t i = begin; i < end; ++i) {
        const std::uint64_t p = pos[i] + (row_relative ? begin : 0);
        const bool inside = p >= begin && p < end;
        const bool stable = i == begin || sorted[i - 1] != sorted[i] || pos[i - 1] < pos[i];
        if (!inside || host_keys_[p] != sorted[i] || !stable) {
          std::printf("FAIL %s: position %u at %llu (segment %zu)\n", case_.name.c_str(), pos[i],
                      static_cast<unsigned long long>(i), s);
          return false;
        }
      }
    }
    return true;
  }

  const Case& case_;
  const gk::Stream* gk_stream_;
  cudaStream_t stream_;
  int runs_;
  std::size_t n_ = 0, segments_ = 0;
  std::vector<std::uint32_t> host_keys_;
  gk::SegmentSortPlan plan_;
  DeviceBuffer keys_in_, keys_out_, pos_[2], offsets64_, offsets32_;
};

}  // namespace

int main(int argc, char** argv) {
  int runs = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else {
      Die(std::string("usage: ") + argv[0] + " [--runs N]", 2);
    }
  }
  if (runs < 1) Die("--runs must be at least 1", 2);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) Die("no usable CUDA device", 2);
  cudaDeviceProp props{};
  CUDA_CHECK(cudaGetDeviceProperties(&props, 0));
  std::printf("device: %s; median of %d runs after 3 warm-up, L2 flushed before each\n", props.name, runs);
  gk::Stream stream;
  KERNELS_CHECK(gk::Stream::Create(&stream));
  L2Flusher flusher;
  bool ok = true;
  for (const Case& c : Cases()) {
    Runner runner(c, stream, runs);
    ok = runner.Run(flusher) && ok;
  }
  std::printf(ok ? "all answers verified\n" : "FAILED\n");
  return ok ? 0 : 1;
}
