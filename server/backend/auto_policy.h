// AUTO's choices, in one place: the engine (the router, auto_router.h, sends small work to the CPU
// engine) and, on the GPU engine, the top-k kernel. Each threshold comes from
// bench/backend_crossover_bench on the H100 machine (16 host cores), BENCHMARKS.md "AUTO: where the CPU
// wins": the CUDA backend's whole call (staging, PCIe both ways, kernels) beside the CPU backend's.
// Change them only with a new measurement.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "server/core/spec.h"

namespace gpusort {

// Sort: below this many keys the CPU answers first. Measured 2026-11-22: at 8192 keys the CPU took
// 0.56-0.64x the GPU's time (u32, f32, argsort; u64 1.04x), at 16384 the GPU took 0.53-0.97x the CPU's.
inline constexpr std::size_t kAutoSortCpuBelowKeys = 16384;

// TopK: the CPU's selection reads the keys once at host memory speed, which the GPU cannot beat when
// the keys must first cross PCIe: for k = 100 the CPU won at every size measured (256 to 64M keys, by
// about 2x at 64M). For large k the GPU's sort wins from 16384 keys (k = n/8: 1.2x at 16K, 84x at 16M).
// k between 128 and n/8 was not measured; such requests go to the GPU.
inline constexpr std::size_t kAutoTopKCpuBelowKeys = 16384;
inline constexpr std::size_t kAutoTopKCpuUpToK = 128;
// ... except from registered (pinned) shared memory, where the GPU reads the region by DMA and the CPU
// must first copy it into private memory (Backend::TopKPinned). Measured on the H100 machine
// (2026-11-25, scripts/auto-routing-bench.sh topk, f32 top-100, p50 at 1 in flight): 1M keys CPU 1.15 ms
// vs GPU 1.02 ms (at 16 in flight 3,429 vs 3,362 req/s: parity), 16M keys CPU 40.1 ms (35 of them the
// copy) vs GPU 5.0 ms. So from 1M keys a pinned top-k with small k goes to the GPU.
inline constexpr std::size_t kAutoPinnedTopKGpuFromKeys = std::size_t{1} << 20;

enum class AutoChoice { kCpu, kGpuRadix };

AutoChoice ChooseSort(const SortSpec& spec, std::size_t count);
// `pinned`: the keys lie in registered shared memory (TopKPinned).
AutoChoice ChooseTopK(const TopKSpec& spec, std::size_t count, bool pinned = false);

// How AUTO picks between the CPU and the GPU engine (the server's --auto-routing).
enum class AutoRouting {
  kSize,  // by method, size and k alone: ChooseSort / ChooseTopK above (the default)
  // By expected finish time (issue 18): each engine's estimated work in flight plus this request's, on
  // the cost model below; the engine that would finish it first takes it. Where only one engine is fit
  // (below kAutoLoadMinKeys, or a top-k whose k the CPU selects slowly) the size rule stands.
  // When neither engine has work in flight, the size rule, measured for one request alone, decides.
  kLoad,
  kGpu,  // everything AUTO may send to the GPU goes there: the GPU-only anchor of the load benchmarks
};
// "size", "load" or "gpu"; nullopt for anything else.
std::optional<AutoRouting> ParseAutoRouting(std::string_view name);
std::string_view AutoRoutingName(AutoRouting routing);

// Load-aware AUTO's cost model: the seconds of an engine's capacity one request takes, fixed plus per
// key, as throughput under load (what 1 / requests-per-second gives), not one request's latency alone.
// Priors from the H100 machine (16 cores), issue 18's figures and BENCHMARKS.md "AUTO: where the CPU
// wins": 64K u32 sorts at 16 in flight, CPU server 6,512/s (153 us each: ~2.3 ns a key) and CUDA server
// 4,872/s (205 us); a 16M sort from host memory spends ~8 ms staging on the GPU path (0.5 ns a key),
// from shared memory 3.74 ms (0.22 ns); a 16M top-100 on the CPU 2.70 ms (0.17 ns a key), on the GPU
// from shared memory ~1.3 ms (0.08 ns). Re-measured on the grid of scripts/auto-routing-bench.sh.
struct EngineCost {
  double fixed_seconds = 0;
  double seconds_per_key = 0;
  double Seconds(std::size_t keys) const { return fixed_seconds + seconds_per_key * static_cast<double>(keys); }
};
// `pinned`: the keys lie in registered (pinned) host memory, so the GPU copies them without staging.
EngineCost CpuSortCost(const SortSpec& spec);
EngineCost GpuSortCost(const SortSpec& spec, bool pinned);
EngineCost CpuTopKCost(const TopKSpec& spec);
EngineCost GpuTopKCost(const TopKSpec& spec, bool pinned);

// Below this many keys load-aware AUTO keeps to the CPU, as the size rule does: such calls may run
// inline on a gRPC thread (the scheduler's --inline-max-keys, 4096 by default), where GPU work would
// hold the thread, and the GPU's fixed cost is tens of such calls.
inline constexpr std::size_t kAutoLoadMinKeys = 4097;

// Load-aware AUTO's choice for one request: with nothing in flight on either engine, `by_size` (the
// size rule: its thresholds are the latency of one request alone, where the model's costs are
// capacity under load); otherwise the engine whose work in flight (seconds, by the model) plus the
// request's own cost ends first, ties to the CPU, which needs no PCIe.
AutoChoice ChooseByLoad(AutoChoice by_size, double cpu_backlog_seconds, const EngineCost& cpu,
                        double gpu_backlog_seconds, const EngineCost& gpu, std::size_t count);

// The GPU kernel for a Sort of several rows (SortSpec::rows): BITONIC for rows of up to 4096 keys (one
// block per row, in registers and shared memory), else RADIX (CUB's segmented sort). Measured for the
// row kernels themselves (BENCHMARKS.md "Many rows at once", issue 6): bitonic rows 0.170 ms for
// 65536 x 256 u32 against CUB DeviceSegmentedSort's 5.07 ms, 0.234 against 1.34 ms for 16384 x 1024;
// bitonic rows stop at 4096 keys. The crossover through the whole Sort path was not measured.
Algorithm ChooseRowSortKernel(const SortSpec& spec, std::size_t count);

// The GPU kernel for a TopK that ChooseTopK sent to the GPU: RADIX_SELECT (one row), SMALL_K (rows with
// k <= 1024, and one row of 16-bit keys, which it selects at their own width), BITONIC (sorting rows of
// up to 4096 keys) or RADIX (CUB's sort, segmented for rows).
Algorithm ChooseTopKKernel(const TopKSpec& spec, std::size_t count);

}  // namespace gpusort
