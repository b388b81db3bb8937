// cub::DeviceTopK of CCCL main as an anchor for the top-k figures (issue 44): the CUDA toolkit's CUB has
// no DeviceTopK, so this program is built on its own against CCCL main's headers (a fetched checkout,
// GPUSORT_CCCL_MAIN_DIR; never part of the product) and includes nothing of gpusort, so that two CUB
// versions never meet in one binary. It runs CUB's fastest mode: unsorted output, determinism not
// guaranteed (gpusort's top-k is sorted and deterministic, ties to the earlier position).
//
//   cub_topk_anchor [--n 268435456] [--runs 30] [--warmup 5] [--json FILE]
//
// --json writes the cases as top_k_bench's records (case names f32_256M_k100 ..., method
// cub_device_topk), for `top_k_report.py --cub FILE` to put CUB beside gpusort and torch.
// Cases, each on the same device array: float32 uniform on torch.rand's grid (k = 100 and 1000, largest,
// values with int64 positions from a counting iterator), bfloat16 of the same values, and the floor: a
// device-to-device copy of the same bytes. Device time by CUDA events, median. Every answer's values are
// checked against the host's nth_element (a multiset: ties may come back in any order).
#include <cub/device/device_topk.cuh>
#include <cuda/iterator>
#include <cuda/std/execution>
#include <cuda/stream>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cub_topk_anchor: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

double MedianMs(int runs, int warmup, cudaStream_t stream, const std::function<void()>& call) {
  cudaEvent_t start, stop;
  Check(cudaEventCreate(&start), "event");
  Check(cudaEventCreate(&stop), "event");
  std::vector<float> ms;
  for (int i = 0; i < warmup + runs; ++i) {
    Check(cudaEventRecord(start, stream), "record");
    call();
    Check(cudaEventRecord(stop, stream), "record");
    Check(cudaEventSynchronize(stop), "sync");
    float t = 0;
    Check(cudaEventElapsedTime(&t, start, stop), "elapsed");
    if (i >= warmup) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms[ms.size() / 2];
}

template <typename Key>
double TopK(const Key* d_keys, std::size_t n, int k, const std::vector<float>& host_values, int runs, int warmup,
            cudaStream_t stream, const char* name) {
  Key* d_out = nullptr;
  std::int64_t* d_pos = nullptr;
  Check(cudaMalloc(&d_out, k * sizeof(Key)), "malloc");
  Check(cudaMalloc(&d_pos, k * sizeof(std::int64_t)), "malloc");
  auto requirements = cuda::execution::require(cuda::execution::determinism::not_guaranteed,
                                               cuda::execution::output_ordering::unsorted);
  auto env = cuda::std::execution::env{cuda::stream_ref{stream}, requirements};
  cuda::counting_iterator<std::int64_t> positions{0};
  std::size_t temp_bytes = 0;
  Check(cub::DeviceTopK::MaxPairs(nullptr, temp_bytes, d_keys, d_out, positions, d_pos, n, k, env), "temp size");
  void* temp = nullptr;
  Check(cudaMalloc(&temp, temp_bytes), "malloc temp");
  const double ms = MedianMs(runs, warmup, stream, [&] {
    Check(cub::DeviceTopK::MaxPairs(temp, temp_bytes, d_keys, d_out, positions, d_pos, n, k, env), "MaxPairs");
  });
  // The answer's values as a multiset against the host's k largest.
  std::vector<Key> got(k);
  Check(cudaMemcpy(got.data(), d_out, k * sizeof(Key), cudaMemcpyDeviceToHost), "copy back");
  std::vector<float> got_f(k), want(host_values);
  for (int i = 0; i < k; ++i) got_f[i] = static_cast<float>(got[i]);
  std::nth_element(want.begin(), want.begin() + k, want.end(), std::greater<float>());
  want.resize(k);
  std::sort(want.begin(), want.end());
  std::sort(got_f.begin(), got_f.end());
  if (got_f != want) {
    std::fprintf(stderr, "cub_topk_anchor: %s k=%d: the values differ from the host's\n", name, k);
    std::exit(1);
  }
  cudaFree(temp);
  cudaFree(d_out);
  cudaFree(d_pos);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = std::size_t{256} << 20;
  int runs = 30, warmup = 5;
  std::string json;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--n") n = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--json") json = argv[i + 1];
    else if (flag == "--runs") runs = std::atoi(argv[i + 1]);
    else if (flag == "--warmup") warmup = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: cub_topk_anchor [--n N] [--runs R] [--warmup W] [--json FILE]\n");
      return 2;
    }
  }
  cudaDeviceProp prop{};
  Check(cudaGetDeviceProperties(&prop, 0), "device");
  std::vector<float> values(n);
  std::mt19937_64 rng(2);
  for (auto& x : values) x = static_cast<float>(rng() >> 40) * 0x1p-24f;  // torch.rand's grid
  std::vector<__nv_bfloat16> halves(n);
  std::vector<float> half_values(n);
  for (std::size_t i = 0; i < n; ++i) {
    halves[i] = __float2bfloat16(values[i]);
    half_values[i] = __bfloat162float(halves[i]);
  }
  cudaStream_t stream;
  Check(cudaStreamCreate(&stream), "stream");
  float* d_f32 = nullptr;
  __nv_bfloat16* d_bf16 = nullptr;
  void* d_copy = nullptr;
  Check(cudaMalloc(&d_f32, n * 4), "malloc");
  Check(cudaMalloc(&d_bf16, n * 2), "malloc");
  Check(cudaMalloc(&d_copy, n * 4), "malloc");
  Check(cudaMemcpy(d_f32, values.data(), n * 4, cudaMemcpyHostToDevice), "upload");
  Check(cudaMemcpy(d_bf16, halves.data(), n * 2, cudaMemcpyHostToDevice), "upload");
  std::printf("cub::DeviceTopK::MaxPairs (CCCL %d.%d.%d), unsorted, determinism not guaranteed, on %s; "
              "median of %d after %d, CUDA events\n\n| case | ms | GB/s of the keys |\n|---|---:|---:|\n",
              CCCL_MAJOR_VERSION, CCCL_MINOR_VERSION, CCCL_PATCH_VERSION, prop.name, runs, warmup);
  // top_k_bench's case names: the dtype, n (in M where whole), k.
  const std::string n_name = n % (std::size_t{1} << 20) == 0 ? std::to_string(n >> 20) + "M" : std::to_string(n);
  std::string records;
  auto row = [&](const char* name, double ms, std::size_t bytes) {
    std::printf("| %s | %.3f | %.0f |\n", name, ms, bytes / (ms * 1e6));
    const std::string label = name;
    const std::size_t at = label.find(" k=");
    if (label.rfind("copy", 0) == 0 || at == std::string::npos) return;
    const std::string k = label.substr(at + 3), dtype = label.substr(0, at);
    records += std::string(records.empty() ? "" : ",\n") + "    {\"case\": \"" + dtype + "_" + n_name + "_k" + k +
               "\", \"n\": " + std::to_string(n) + ", \"rows\": 1, \"row_length\": " + std::to_string(n) +
               ", \"k\": " + k + ", \"method\": \"cub_device_topk\", \"median_ms\": " + std::to_string(ms) +
               ", \"runs\": " + std::to_string(runs) + "}";
  };
  const double copy_f32 = MedianMs(runs, warmup, stream, [&] {
    Check(cudaMemcpyAsync(d_copy, d_f32, n * 4, cudaMemcpyDeviceToDevice, stream), "copy");
  });
  row("copy_d2d f32 (floor)", copy_f32, n * 4);
  row("f32 k=100", TopK(d_f32, n, 100, values, runs, warmup, stream, "f32"), n * 4);
  row("f32 k=1000", TopK(d_f32, n, 1000, values, runs, warmup, stream, "f32"), n * 4);
  const double copy_bf16 = MedianMs(runs, warmup, stream, [&] {
    Check(cudaMemcpyAsync(d_copy, d_bf16, n * 2, cudaMemcpyDeviceToDevice, stream), "copy");
  });
  row("copy_d2d bf16 (floor)", copy_bf16, n * 2);
  row("bf16 k=100", TopK(d_bf16, n, 100, half_values, runs, warmup, stream, "bf16"), n * 2);
  row("bf16 k=1000", TopK(d_bf16, n, 1000, half_values, runs, warmup, stream, "bf16"), n * 2);
  if (!json.empty()) {
    FILE* out = std::fopen(json.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "cub_topk_anchor: cannot write %s\n", json.c_str());
      return 1;
    }
    std::fprintf(out, "{\"device\": \"%s\", \"cccl_version\": \"%d.%d.%d\", \"records\": [\n%s\n]}\n", prop.name,
                 CCCL_MAJOR_VERSION, CCCL_MINOR_VERSION, CCCL_PATCH_VERSION, records.c_str());
    std::fclose(out);
  }
  return 0;
}
