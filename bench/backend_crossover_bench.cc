// Where AUTO should stop sending work to the CPU: the CUDA backend (staging, PCIe both ways, kernels)
// beside the CPU backend, through the Backend interface exactly as the server calls them, for sizes
// from 256 keys to 4M. Wall clock per call on the calling thread, median of many calls after warm-up.
// The result justifies the thresholds in server/backend/auto_policy.h.
//
//   build/bin/backend_crossover_bench [--json PATH] [--topk-only]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/backend/cpu/cpu_backend.h"
#include "server/backend/cuda_backend.h"
#include "server/core/dtype.h"
#include "tests/support/inputs.h"

namespace gpusort {
namespace {

template <typename F>
double MedianMs(int runs, F&& call) {
  for (int i = 0; i < 3; ++i) call();  // warm-up
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

struct Row {
  std::string what;
  std::size_t n;
  double cpu_ms, gpu_ms;
};

template <typename T>
Row TimeSort(Backend& cpu, Backend& gpu, std::size_t n, bool argsort) {
  const std::vector<T> input = testing::MakeInput<T>(testing::Pattern::kRandom, n, n);
  std::vector<std::byte> keys(n * sizeof(T));
  std::vector<int64_t> indices(n);
  SortSpec spec;
  spec.dtype = DTypeOf<T>::value;
  spec.payload = argsort ? SortPayload::kIndices : SortPayload::kNone;
  auto run = [&](Backend& backend, Algorithm algorithm) {
    return MedianMs(n >= (1 << 20) ? 20 : 100, [&] {
      std::memcpy(keys.data(), input.data(), keys.size());  // a fresh unsorted input every call
      SortBuffers buffers;
      buffers.count = n;
      buffers.keys = keys;
      if (argsort) buffers.indices_out = indices;
      spec.algorithm = algorithm;
      Cancellation cancellation;
      ExecutionReport report;
      absl::Status status = RunSort(backend, spec, buffers, cancellation, report);
      if (!status.ok()) {
        std::fprintf(stderr, "sort failed: %s\n", std::string(status.message()).c_str());
        std::exit(1);
      }
    });
  };
  return {std::string(argsort ? "argsort " : "sort ") + std::string(DTypeName(spec.dtype)), n,
          run(cpu, Algorithm::kAuto), run(gpu, Algorithm::kRadix)};
}

// The GPU side runs `gpu_algorithm` by name (AUTO would hand small k to the CPU).
Row TimeTopK(Backend& cpu, Backend& gpu, std::size_t n, std::size_t k, Algorithm gpu_algorithm) {
  const std::vector<float> input = testing::MakeInput<float>(testing::Pattern::kRandom, n, n);
  std::vector<std::byte> values(k * sizeof(float));
  std::vector<int64_t> indices(k);
  TopKSpec spec;
  spec.dtype = DType::kFloat32;
  spec.k = k;
  auto run = [&](Backend& backend, Algorithm algorithm) {
    return MedianMs(n >= (1 << 20) ? 20 : 100, [&] {
      TopKBuffers buffers;
      buffers.count = n;
      buffers.keys = std::as_bytes(std::span(input));
      buffers.values_out = values;
      buffers.indices_out = indices;
      spec.algorithm = algorithm;
      Cancellation cancellation;
      ExecutionReport report;
      if (!RunTopK(backend, spec, buffers, cancellation, report).ok()) std::exit(1);
    });
  };
  return {"topk f32 k=" + std::to_string(k) + " " + std::string(AlgorithmName(gpu_algorithm)), n,
          run(cpu, Algorithm::kAuto), run(gpu, gpu_algorithm)};
}

// Concurrent requests on different streams overlap: the same 16 sorts of 16M u32 keys from 4 threads,
// on a backend with one stream (everything serialized on the GPU) and with four.
double ConcurrentSortsMs(int streams) {
  auto gpu = MakeCudaBackend({.engine = {.streams = streams}});
  if (!gpu.ok()) std::exit(2);
  constexpr std::size_t kN = std::size_t{1} << 24;
  constexpr int kThreads = 4, kPerThread = 4;
  const std::vector<uint32_t> input = testing::MakeInput<uint32_t>(testing::Pattern::kRandom, kN, 9);
  auto worker = [&](int requests) {
    std::vector<std::byte> keys(kN * 4);
    for (int i = 0; i < requests; ++i) {
      std::memcpy(keys.data(), input.data(), keys.size());
      SortSpec spec;
      spec.algorithm = Algorithm::kRadix;
      SortBuffers buffers;
      buffers.count = kN;
      buffers.keys = keys;
      Cancellation cancellation;
      ExecutionReport report;
      if (!RunSort(*(*gpu), spec, buffers, cancellation, report).ok()) std::exit(1);
    }
  };
  worker(1);  // warm the pool
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, kPerThread);
  for (auto& t : threads) t.join();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace
}  // namespace gpusort

int main(int argc, char** argv) {
  using namespace gpusort;
  std::string json_path;
  bool topk_only = false;  // --topk-only: the TopK rows alone (AUTO's top-k thresholds)
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--json" && i + 1 < argc) json_path = argv[i + 1];
    if (std::string(argv[i]) == "--topk-only") topk_only = true;
  }
  auto gpu = MakeCudaBackend({});
  if (!gpu.ok()) {
    std::fprintf(stderr, "no GPU: %s\n", std::string(gpu.status().message()).c_str());
    return 2;
  }
  std::unique_ptr<Backend> cpu = MakeCpuBackend({});
  // Each row is printed as soon as it is measured, so that a run cut short still reports what it has.
  std::printf("%-32s %10s %12s %12s %10s\n", "case", "n", "cpu ms", "cuda ms", "cpu/cuda");
  std::vector<Row> rows;
  auto add = [&](Row r) {
    std::printf("%-32s %10zu %12.4f %12.4f %10.2f\n", r.what.c_str(), r.n, r.cpu_ms, r.gpu_ms, r.cpu_ms / r.gpu_ms);
    std::fflush(stdout);
    rows.push_back(std::move(r));
  };
  for (std::size_t n = 256; n <= (std::size_t{1} << 22); n *= 2) {
    if (!topk_only) {
      add(TimeSort<uint32_t>(*cpu, **gpu, n, false));
      add(TimeSort<float>(*cpu, **gpu, n, false));
      add(TimeSort<uint64_t>(*cpu, **gpu, n, false));
      add(TimeSort<float>(*cpu, **gpu, n, true));
    }
    for (Algorithm a : {Algorithm::kRadix, Algorithm::kRadixSelect, Algorithm::kSmallK}) {
      add(TimeTopK(*cpu, **gpu, n, std::min<std::size_t>(n, 100), a));
    }
    if (n >= 4096) {
      for (Algorithm a : {Algorithm::kRadix, Algorithm::kRadixSelect}) add(TimeTopK(*cpu, **gpu, n, n / 8, a));
    }
  }
  for (std::size_t n : {std::size_t{1} << 24, std::size_t{1} << 26}) {
    if (!topk_only) add(TimeSort<uint32_t>(*cpu, **gpu, n, false));
    for (Algorithm a : {Algorithm::kRadix, Algorithm::kRadixSelect, Algorithm::kSmallK}) {
      add(TimeTopK(*cpu, **gpu, n, 100, a));
    }
    for (Algorithm a : {Algorithm::kRadix, Algorithm::kRadixSelect}) add(TimeTopK(*cpu, **gpu, n, n / 8, a));
  }
  std::ofstream json;
  if (!json_path.empty()) json.open(json_path);
  if (json) json << "[\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    if (json) {
      json << "  {\"case\": \"" << r.what << "\", \"n\": " << r.n << ", \"cpu_ms\": " << r.cpu_ms
           << ", \"cuda_ms\": " << r.gpu_ms << "}" << (i + 1 < rows.size() ? ",\n" : "\n");
    }
  }
  if (json) json << "]\n";
  std::printf("device: %s; cpu: %s\n", (*gpu)->device().c_str(), cpu->device().c_str());
  if (topk_only) return 0;
  gpu->reset();  // one backend at a time owns the staging buffers
  const double one = ConcurrentSortsMs(1), four = ConcurrentSortsMs(4);
  std::printf("16 sorts of 16M u32 from 4 threads: 1 stream %.1f ms, 4 streams %.1f ms (%.2fx)\n", one, four,
              one / four);
  return 0;
}
