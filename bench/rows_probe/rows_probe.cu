// The rows tile kernel of bitonic_network.cuh (from the -I variant folder that
// bench/rows_probe/run.sh puts ahead of kernels/src) at 65536 x 256 and 16384 x
// 1024 u32, timed with events (median of N after warm-up, L2 flushed) and
// checked against std::sort.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bitonic_network.cuh"
using namespace gpusort::kernels::bitonic;
#define CK(x)                                             \
  do {                                                    \
    cudaError_t e = (x);                                  \
    if (e != cudaSuccess) {                               \
      std::printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      std::exit(1);                                       \
    }                                                     \
  } while (0)

// Whole rows take the vector path (TileJob::whole_tiles) where the variant's
// TileJob has it; a variant from before it sets nothing.
template <typename Job>
auto SetWholeTiles(Job &job, int) -> decltype(job.whole_tiles = true, void()) {
  job.whole_tiles = true;
}
template <typename Job>
void SetWholeTiles(Job &, long) {}

template <int kLogP>
double Run(int rows, int runs, const char *name) {
  using S = Shape<kLogP>;
  const size_t n = size_t(rows) << kLogP;
  std::vector<unsigned> h(n);
  std::mt19937 rng(7);
  for (auto &x : h) x = rng();
  for (size_t i = 0; i < 1024 && i < n; ++i) h[i] = i % 5;  // a few equal keys too
  unsigned *src, *buf, *flush;
  const size_t flush_bytes = 256u << 20;
  CK(cudaMalloc(&src, n * 4));
  CK(cudaMalloc(&buf, n * 4));
  CK(cudaMalloc(&flush, flush_bytes));
  CK(cudaMemcpy(src, h.data(), n * 4, cudaMemcpyHostToDevice));
  TileJob job;
  SetWholeTiles(job, 0);
  job.tiles = rows;
  job.stride = 1u << kLogP;
  job.in_limit = n;
  job.out_limit = n;
  const unsigned blocks = (rows + S::kTilesPerBlock - 1) / S::kTilesPerBlock;
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int i = 0; i < runs + 3; ++i) {
    CK(cudaMemcpy(buf, src, n * 4, cudaMemcpyDeviceToDevice));
    CK(cudaMemset(flush, i, flush_bytes));
    CK(cudaEventRecord(a));
    TileKernel<unsigned, false, kLogP, false><<<blocks, S::kThreads>>>(buf, nullptr, buf, nullptr, job);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    CK(cudaGetLastError());
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (i >= 3) t.push_back(ms);
  }
  std::vector<unsigned> out(n);
  CK(cudaMemcpy(out.data(), buf, n * 4, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (int r = 0; r < rows; ++r) {
    std::sort(h.begin() + (size_t(r) << kLogP), h.begin() + (size_t(r + 1) << kLogP));
    if (!std::equal(h.begin() + (size_t(r) << kLogP), h.begin() + (size_t(r + 1) << kLogP),
                    out.begin() + (size_t(r) << kLogP)))
      ++bad;
  }
  std::sort(t.begin(), t.end());
  std::printf("%s rows %d x %d: median %.4f ms min %.4f  bad rows %zu\n", name, rows, 1 << kLogP, t[t.size() / 2], t[0],
              bad);
  cudaFree(src);
  cudaFree(buf);
  cudaFree(flush);
  return t[t.size() / 2];
}

int main(int argc, char **argv) {
  const char *name = argc > 1 ? argv[1] : "?";
  const int runs = argc > 2 ? std::atoi(argv[2]) : 30;
  Run<8>(65536, runs, name);
  Run<10>(16384, runs, name);
  return 0;
}
