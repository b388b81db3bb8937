// The CPU backend beside std::sort on the same inputs, and the alternatives measured when choosing its
// sort (see the comment at the top of server/backend/cpu/radix_sort.h).
//
//   build-cpu/bin/cpu_sort_bench --benchmark_filter=16M --benchmark_min_time=1
//
// Names: <what>/<dtype>/<size>. Every iteration sorts a fresh copy of one fixed random input (the copy
// is not timed); times are wall clock (the parallel sorts use several threads).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <execution>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <boost/sort/sort.hpp>
#include <boost/sort/spreadsort/spreadsort.hpp>
#include <tbb/info.h>
#include <tbb/parallel_sort.h>

#include "server/backend/cpu/cpu_backend.h"
#include "server/backend/cpu/radix_sort.h"
#include "server/core/dtype.h"
#include "server/core/key_order.h"
#include "tests/support/inputs.h"

namespace gpusort {
namespace {

constexpr std::size_t k16M = std::size_t{1} << 24;

// Random inputs per (type, size), built once and shared by every benchmark that sorts them. Small sizes
// get many different inputs, used in turn: sorting one small input over and over lets the branch
// predictor learn it (std::sort of 4096 keys ran 25x faster per key than of 16384 that way).
template <typename T>
const std::vector<std::vector<T>>& Inputs(std::size_t n) {
  static std::map<std::size_t, std::vector<std::vector<T>>> inputs;
  auto it = inputs.find(n);
  if (it == inputs.end()) {
    const std::size_t count = std::clamp<std::size_t>((std::size_t{1} << 22) / std::max<std::size_t>(n, 1), 1, 256);
    std::vector<std::vector<T>> v;
    for (std::size_t i = 0; i < count; ++i)
      v.push_back(testing::MakeInput<T>(testing::Pattern::kRandom, n, /*seed=*/42 + i));
    it = inputs.emplace(n, std::move(v)).first;
  }
  return it->second;
}
template <typename T>
const std::vector<T>& Input(std::size_t n) {
  return Inputs<T>(n).front();
}

int Threads() { return tbb::info::default_concurrency(); }

// Times sort(work) on a fresh copy of the input in every iteration.
template <typename T, typename Sort>
void TimeSort(benchmark::State& state, std::size_t n, Sort&& sort) {
  const std::vector<std::vector<T>>& inputs = Inputs<T>(n);
  std::vector<T> work(n);
  std::size_t next = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::vector<T>& input = inputs[next++ % inputs.size()];
    std::copy(input.begin(), input.end(), work.begin());
    state.ResumeTiming();
    sort(work);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
  state.counters["threads"] = Threads();
}

// ---- The baseline and the backend.
template <typename T>
void BM_StdSort(benchmark::State& state) {
  TimeSort<T>(state, state.range(0), [](std::vector<T>& v) {
    if constexpr (std::is_integral_v<T>)
      std::sort(v.begin(), v.end());
    else
      std::sort(v.begin(), v.end(), KeyLess<T>{});  // the service's float order
  });
}

template <typename T>
void BackendSort(benchmark::State& state, Backend& backend, SortPayload payload, std::size_t width,
                 bool stable) {
  const std::size_t n = state.range(0);
  SortSpec spec{.dtype = DTypeOf<T>::value, .order = SortOrder::kAscending, .stable = stable,
                .payload = payload, .value_width = width, .algorithm = Algorithm::kAuto};
  std::vector<std::byte> values(payload == SortPayload::kValues ? n * width : 0), values_out(values.size());
  std::vector<int64_t> indices(payload == SortPayload::kIndices ? n : 0);
  TimeSort<T>(state, n, [&](std::vector<T>& v) {
    SortBuffers b;
    b.count = n;
    b.keys = std::as_writable_bytes(std::span<T>(v));
    b.values = values;
    b.values_out = values_out;
    b.indices_out = indices;
    Cancellation cancellation;
    ExecutionReport report;
    if (!RunSort(backend, spec, b, cancellation, report).ok()) state.SkipWithError("sort failed");
  });
}

template <typename T>
void BM_CpuBackend(benchmark::State& state) {
  static std::unique_ptr<Backend> backend = MakeCpuBackend();
  BackendSort<T>(state, *backend, SortPayload::kNone, 0, false);
}

void BM_CpuBackend1Thread(benchmark::State& state) {
  static std::unique_ptr<Backend> backend = MakeCpuBackend({.threads = 1});
  BackendSort<uint32_t>(state, *backend, SortPayload::kNone, 0, false);
}

// Payloads: argsort (stable) and values moved with their keys.
template <typename T>
void BM_CpuBackendIndices(benchmark::State& state) {
  static std::unique_ptr<Backend> backend = MakeCpuBackend();
  BackendSort<T>(state, *backend, SortPayload::kIndices, 0, true);
}
template <typename T>
void BM_StdStableArgsort(benchmark::State& state) {
  const std::size_t n = state.range(0);
  std::vector<int64_t> idx(n);
  TimeSort<T>(state, n, [&](std::vector<T>& v) {
    std::iota(idx.begin(), idx.end(), int64_t{0});
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return KeyLess<T>{}(v[a], v[b]); });
  });
}
template <typename T>
void BM_CpuBackendValues(benchmark::State& state) {
  static std::unique_ptr<Backend> backend = MakeCpuBackend();
  BackendSort<T>(state, *backend, SortPayload::kValues, state.range(1), true);
}

// ---- Alternatives (uint32 keys).
void BM_StdStableSort(benchmark::State& state) {
  TimeSort<uint32_t>(state, state.range(0), [](auto& v) { std::stable_sort(v.begin(), v.end()); });
}
void BM_StdSortPar(benchmark::State& state) {
  TimeSort<uint32_t>(state, state.range(0),
                     [](auto& v) { std::sort(std::execution::par, v.begin(), v.end()); });
}
void BM_TbbParallelSort(benchmark::State& state) {
  TimeSort<uint32_t>(state, state.range(0), [](auto& v) { tbb::parallel_sort(v.begin(), v.end()); });
}
void BM_BoostBlockIndirectSort(benchmark::State& state) {
  TimeSort<uint32_t>(state, state.range(0), [](auto& v) {
    boost::sort::block_indirect_sort(v.begin(), v.end(), static_cast<uint32_t>(Threads()));
  });
}
void BM_BoostSampleSort(benchmark::State& state) {
  TimeSort<uint32_t>(state, state.range(0), [](auto& v) {
    boost::sort::sample_sort(v.begin(), v.end(), static_cast<uint32_t>(Threads()));
  });
}
void BM_BoostParallelStableSort(benchmark::State& state) {
  TimeSort<uint32_t>(state, state.range(0), [](auto& v) {
    boost::sort::parallel_stable_sort(v.begin(), v.end(), static_cast<uint32_t>(Threads()));
  });
}
void BM_BoostSpreadsort(benchmark::State& state) {
  TimeSort<uint32_t>(state, state.range(0),
                     [](auto& v) { boost::sort::spreadsort::integer_sort(v.begin(), v.end()); });
}
// The engine with 11-bit digits (3 passes instead of 4, 2048 buckets).
void BM_Radix11Bit(benchmark::State& state) {
  TimeSort<uint32_t>(state, state.range(0), [](auto& v) {
    auto* bytes = reinterpret_cast<std::byte*>(v.data());
    (void)cpu::radix::Sort<uint32_t, 11>(v.size(), bytes, bytes, uint32_t{0}, cpu::radix::NoPayload{},
                                         Threads(), nullptr);
  });
}

// ---- TopK: rows x m keys (uint32/float), k results per row.
template <typename T>
void BM_CpuBackendTopK(benchmark::State& state) {
  static std::unique_ptr<Backend> backend = MakeCpuBackend();
  const std::size_t rows = state.range(0), m = state.range(1), k = state.range(2);
  const std::vector<T>& input = Input<T>(rows * m);
  TopKSpec spec{.dtype = DTypeOf<T>::value, .k = k, .largest = true, .sorted = true,
                .output = TopKOutput::kValuesAndIndices, .rows = rows};
  std::vector<std::byte> values(rows * k * sizeof(T));
  std::vector<int64_t> indices(rows * k);
  TopKBuffers b;
  b.count = rows * m;
  b.keys = std::as_bytes(std::span<const T>(input));
  b.values_out = values;
  b.indices_out = indices;
  for (auto _ : state) {
    Cancellation cancellation;
    ExecutionReport report;
    if (!RunTopK(*backend, spec, b, cancellation, report).ok()) state.SkipWithError("topk failed");
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(rows * m));
}
// Baseline: per row, std::partial_sort of positions by (key desc, position), as the reference does.
template <typename T>
void BM_StdPartialSortTopK(benchmark::State& state) {
  const std::size_t rows = state.range(0), m = state.range(1), k = state.range(2);
  const std::vector<T>& input = Input<T>(rows * m);
  std::vector<uint32_t> idx(m);
  std::vector<int64_t> out(rows * k);
  for (auto _ : state) {
    for (std::size_t r = 0; r < rows; ++r) {
      const T* row = input.data() + r * m;
      std::iota(idx.begin(), idx.end(), 0u);
      std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](uint32_t a, uint32_t b) {
        const auto ka = ToOrderedBits(row[a]), kb = ToOrderedBits(row[b]);
        return ka != kb ? ka > kb : a < b;
      });
      std::copy(idx.begin(), idx.begin() + k, out.begin() + r * k);
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(rows * m));
}

void Sizes(benchmark::internal::Benchmark* b) { b->Arg(1 << 8)->Arg(1 << 10)->Arg(1 << 12)->Arg(1 << 14)->Arg(1 << 16)->Arg(1 << 20)->Arg(k16M); }

#define GPUSORT_BENCH(fn) BENCHMARK(fn)->Unit(benchmark::kMillisecond)->UseRealTime()

// 16M random uint32: the acceptance case, every candidate on the same input.
GPUSORT_BENCH(BM_StdSort<uint32_t>)->Name("StdSort/u32")->Apply(Sizes);
GPUSORT_BENCH(BM_CpuBackend<uint32_t>)->Name("CpuBackend/u32")->Apply(Sizes);
GPUSORT_BENCH(BM_CpuBackend1Thread)->Name("CpuBackend1Thread/u32")->Arg(1 << 16)->Arg(1 << 19)->Arg(1 << 20)->Arg(1 << 21)->Arg(1 << 22)->Arg(k16M);
GPUSORT_BENCH(BM_CpuBackend<uint32_t>)->Name("CpuBackendX/u32")->Arg(1 << 19)->Arg(1 << 21)->Arg(1 << 22);
GPUSORT_BENCH(BM_StdStableSort)->Name("Alt/StdStableSort/u32")->Arg(k16M);
GPUSORT_BENCH(BM_StdSortPar)->Name("Alt/StdSortParTBB/u32")->Arg(k16M);
GPUSORT_BENCH(BM_TbbParallelSort)->Name("Alt/TbbParallelSort/u32")->Arg(k16M);
GPUSORT_BENCH(BM_BoostBlockIndirectSort)->Name("Alt/BoostBlockIndirectSort/u32")->Arg(k16M);
GPUSORT_BENCH(BM_BoostSampleSort)->Name("Alt/BoostSampleSort/u32")->Arg(k16M);
GPUSORT_BENCH(BM_BoostParallelStableSort)->Name("Alt/BoostParallelStableSort/u32")->Arg(k16M);
GPUSORT_BENCH(BM_BoostSpreadsort)->Name("Alt/BoostSpreadsort1Thread/u32")->Arg(k16M);
GPUSORT_BENCH(BM_Radix11Bit)->Name("Alt/Radix11Bit/u32")->Arg(k16M);

// Other dtypes.
GPUSORT_BENCH(BM_StdSort<int32_t>)->Name("StdSort/i32")->Arg(1 << 22);
GPUSORT_BENCH(BM_CpuBackend<int32_t>)->Name("CpuBackend/i32")->Arg(1 << 22);
GPUSORT_BENCH(BM_StdSort<uint64_t>)->Name("StdSort/u64")->Arg(1 << 22);
GPUSORT_BENCH(BM_CpuBackend<uint64_t>)->Name("CpuBackend/u64")->Arg(1 << 22);
GPUSORT_BENCH(BM_StdSort<float>)->Name("StdSort/f32")->Arg(1 << 22)->Arg(k16M);
GPUSORT_BENCH(BM_CpuBackend<float>)->Name("CpuBackend/f32")->Arg(1 << 22)->Arg(k16M);
GPUSORT_BENCH(BM_StdSort<double>)->Name("StdSort/f64")->Arg(1 << 22);
GPUSORT_BENCH(BM_CpuBackend<double>)->Name("CpuBackend/f64")->Arg(1 << 22);

// Keys with a payload.
GPUSORT_BENCH(BM_StdStableArgsort<uint32_t>)->Name("StdStableArgsort/u32")->Arg(1 << 22);
GPUSORT_BENCH(BM_CpuBackendIndices<uint32_t>)->Name("CpuBackendIndices/u32")->Arg(1 << 22)->Arg(k16M);
GPUSORT_BENCH(BM_CpuBackendIndices<double>)->Name("CpuBackendIndices/f64")->Arg(1 << 22);
GPUSORT_BENCH(BM_CpuBackendValues<uint32_t>)->Name("CpuBackendValues/u32")
    ->Args({1 << 22, 4})->Args({1 << 22, 8})->Args({1 << 22, 12})->Args({1 << 22, 16})->Args({k16M, 8});

// TopK: {rows, m, k}.
GPUSORT_BENCH(BM_StdPartialSortTopK<float>)->Name("StdPartialSortTopK/f32")
    ->Args({1, k16M, 100})->Args({100'000, 8, 2})->Args({1000, 4096, 64});
GPUSORT_BENCH(BM_CpuBackendTopK<float>)->Name("CpuBackendTopK/f32")
    ->Args({1, k16M, 100})->Args({1, k16M, 1 << 23})->Args({100'000, 8, 2})->Args({1000, 4096, 64})
    ->Args({1000, 4096, 4096});

}  // namespace
}  // namespace gpusort

BENCHMARK_MAIN();
