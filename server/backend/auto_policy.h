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
// must first copy it into private memory (RunInOwnMemory, backend.h). Measured on the H100 machine
// (2026-11-25, scripts/auto-routing-bench.sh topk, f32 top-100, p50 at 1 in flight): 1M keys CPU 1.15 ms
// vs GPU 1.02 ms (at 16 in flight 3,429 vs 3,362 req/s: parity), 16M keys CPU 40.1 ms (35 of them the
// copy) vs GPU 5.0 ms. So from 1M keys a pinned top-k with small k goes to the GPU.
inline constexpr std::size_t kAutoPinnedTopKGpuFromKeys = std::size_t{1} << 20;

enum class AutoChoice { kCpu, kGpuRadix };

AutoChoice ChooseSort(const SortSpec& spec, std::size_t count);
// `pinned`: the keys lie in registered shared memory (Memory::kRegisteredHost).
AutoChoice ChooseTopK(const TopKSpec& spec, std::size_t count, bool pinned = false);

// How AUTO picks between the CPU and the GPU engine (the server's --auto-routing).
enum class AutoRouting {
  kSize,  // by method, size and k alone: ChooseSort / ChooseTopK above
  // By load (issue 18): an AUTO Sort of keys in ordinary memory goes to the GPU from the size that the
  // requests in flight call for (kAutoSortLoadSteps, measured; from 64K even alone). What is in
  // flight is the server's admitted calls (its --max-inflight tickets), as the steps were measured,
  // or, if more, every way work reaches an engine through the router: Sort and TopK in every memory,
  // batches (each of their requests), and streamed and parted sorts while they sort. Top-k,
  // and sorts of registered memory, rows and segments, keep the size rule: an earlier form moved them
  // by a cost model of each engine's work in flight, which the grid found worse than the size rule
  // (BENCHMARKS.md, "AUTO under load"), and the top-k from registered memory that it sent to the CPU
  // cost the mixed load a quarter of its keys/s. The default: on the grids it met the bar in
  // more cells than the size rule (10 of the 12 contested ones against 7), and the mixed load's keys/s
  // stayed the size rule's.
  kLoad,
  kGpu,  // everything AUTO may send to the GPU goes there: the GPU-only anchor of the load benchmarks
};
// "size", "load" or "gpu"; nullopt for anything else.
std::optional<AutoRouting> ParseAutoRouting(std::string_view name);
std::string_view AutoRoutingName(AutoRouting routing);

// Load-aware AUTO's rule for a Sort whose keys are in ordinary memory (gRPC): the GPU from a size that
// grows with the requests already in flight on the two engines, as the grid measured it. Alone it starts
// at 64K, not at the size rule's 16K: at 16K the two engines tie one request at a time on the grid, and
// a closed loop of 4 often finds nothing else in flight between an answer and its next call, which sent
// a share of those 16K sorts to the GPU, where the CPU is faster at 4 in flight. GPU machine
// (H200 host, 16 cores, 2026-11-26; docs/benchmarks-log.md "AUTO under load, a second grid"), u32 sorts over gRPC
// on 4 connections, a CPU-only server beside GPU-only routing: one request at a time, they tie at 16K
// keys (1,505 vs 1,552 req/s) and the GPU wins at 64K (1,047 vs 577); at 4 in flight the CPU wins at 16K
// (6,799 vs 6,148) and the GPU at 64K (3,693 vs 2,482); at 16 and 64 in flight the CPU wins at 64K
// (6,412 vs 5,007; 6,048 vs 4,818) and the GPU from 256K (2,061 vs 1,288; 1,951 vs 1,258). The GPU's
// fixed cost a call (staging, launches, waits) queues on one device where the CPU engine spreads its
// calls over the cores. The H100 machine's grid of the same day (medians of 3 interleaved rounds) has
// the same crossings: 16K at 4 in flight 6,274 vs 5,836; 64K 2,222 vs 2,913 at 4 and 4,863 vs 4,401 at
// 16; 256K at 16 1,080 vs 1,727.
// Where the step lies, in what the router sees: the server's admitted calls, not the callers' (issue
// 18's 64K row, H100, 2026-11-27, docs/benchmarks-log.md "Issue 18, ninth step"). Over gRPC most
// of a 64K call is spent in the transport, outside any ticket: at 16 in flight on a CPU-only server a
// call took 2.8 ms (p50) of which the server held it 1.08, so about 16 x 1.08 / 2.8 = 6 calls were
// admitted at a time; at 64 in flight 64 x 1.25 / 11 = 7; at 4 in flight on the GPU 4 x 0.39 / 1.13 =
// 1.4. A step at 8 others, counted by the engines or by the tickets, sent a share of the 64K sorts at 16
// and 64 in flight to the GPU (0.88x and 0.93x the CPU-only server); at 4 others the 4-in-flight load
// (at most 3 others) keeps the GPU it wins on, and the heavier ones go to the CPU.
struct SortLoadStep {
  int others_in_flight_below;  // this step holds while fewer other requests are in flight
  std::size_t gpu_from_keys;
};
inline constexpr SortLoadStep kAutoSortLoadSteps[] = {{4, 65536}, {1 << 30, 262144}};
// The GPU threshold of kAutoSortLoadSteps for `others_in_flight` requests in flight.
std::size_t SortGpuFromKeysUnderLoad(int others_in_flight);

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
