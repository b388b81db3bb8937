#include "server/backend/cuda/device_merged_sort.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

#include "gpusort/kernels/gather.h"
#include "gpusort/kernels/key_transform.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/sorted_runs.h"
#include "server/backend/cuda/gpu_job.h"
#include "server/backend/cuda/gpu_job_ends.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/backend/cuda/pinned_pool.h"
#include "server/backend/cuda/staging.h"
#include "server/backend/run_splits.h"
#include "server/core/status_macros.h"

namespace gpusort {
namespace {

// Runs of 2^29 keys (2 GiB of 32-bit keys) keep the working buffers near a tenth of an 80 GiB GPU while
// each run's copy (about 40 ms at PCIe 5 speed) hides its sort (about 15 ms on an H100). Fewer keys per
// run where memory is short, down to 2^16.
constexpr std::size_t kLargestRunKeys = std::size_t{1} << 29;
constexpr std::size_t kSmallestRunKeys = std::size_t{1} << 16;
// Blocks of the answer are in flight on two streams per GPU: one is gathered and sorted while the other
// is copied back.
constexpr std::size_t kLanes = 2;
// A sixteenth of the memory stays free for the pool's rounding and for CUB's own launches.
constexpr std::size_t kMemoryMarginDivisor = 16;
constexpr std::size_t kAlign = 256;

std::size_t AlignUp(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
std::size_t DivUp(std::size_t a, std::size_t b) { return (a + b - 1) / b; }
std::size_t RoundUpTo(std::size_t a, std::size_t multiple) { return DivUp(a, multiple) * multiple; }

// Position where piece `i` of `pieces` equal pieces of `n` begins.
std::size_t PieceBegin(std::size_t n, std::size_t pieces, std::size_t i) {
  return static_cast<std::size_t>(static_cast<unsigned __int128>(n) * i / pieces);
}

// Positions travel through the sort as each run's own (uint32, 0..run length - 1) and become the
// array's (int64) as a block is gathered.
constexpr std::size_t kLocalPositionBytes = sizeof(std::uint32_t);
constexpr std::size_t kPositionBytes = sizeof(std::int64_t);

absl::StatusOr<std::size_t> RadixTempBytes(kernels::KeyWidth width, std::size_t count, kernels::Payload payload) {
  kernels::RadixSortArgs args;
  args.key_width = width;
  args.payload = payload;
  args.count = count;
  args.end_bit = width == kernels::KeyWidth::k32 ? 32 : 64;
  std::size_t bytes = 0;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSortTempBytes(args, &bytes), "sizing the sort");
  return bytes;
}

// The sizes of one sort's runs, blocks and buffers. Runs and blocks are equal pieces of the array; GPU d
// holds runs [FirstRun(d), FirstRun(d + 1)) and makes blocks [FirstBlock(d), FirstBlock(d + 1)).
struct Plan {
  std::size_t n = 0, devices = 1, runs = 0, blocks = 0;
  std::size_t run_keys = 0, block_keys = 0;  // the most keys of one run, of one block
  // Runs kept in pinned host memory, not on the GPUs: where the GPUs cannot hold every key. Each run
  // then crosses both ways in phase 1 through a lane's buffer, and the blocks gather from the host.
  bool host_runs = false;
  bool positions = false;  // the keys' positions are wanted too (SortPayload::kIndices)
  std::size_t host_key_bytes = 0, device_key_bytes = 0;
  // Phase 1 (one run sorting at a time per GPU): the sort's second buffer, CUB's temporary storage, the
  // landing place of narrow keys before they widen. Phase 2, per lane: two block buffers and CUB's.
  // With positions: a run's two position buffers; a block's landing for its runs' own positions and two
  // buffers of the array's positions.
  std::size_t run_alt = 0, run_temp = 0, run_landing = 0, run_positions = 0;
  std::size_t run_lane = 0;  // host runs: one lane's run buffer, the sort's second buffers, CUB's, landing
  std::size_t block_buffer = 0, block_temp = 0, block_local = 0, block_positions = 0;
  std::size_t scratch = 0;  // phase 1's and phase 2's buffers share one allocation

  std::size_t RunBegin(std::size_t r) const { return PieceBegin(n, runs, r); }
  std::size_t BlockBegin(std::size_t j) const { return PieceBegin(n, blocks, j); }
  std::size_t FirstRun(std::size_t d) const { return PieceBegin(runs, devices, d); }
  std::size_t FirstBlock(std::size_t d) const { return PieceBegin(blocks, devices, d); }
  std::size_t KeysOn(std::size_t d) const { return RunBegin(FirstRun(d + 1)) - RunBegin(FirstRun(d)); }
  // The per-run bit folds, the searches' queries and their two ranks (every run's, on each GPU).
  std::size_t or_and_bytes() const { return AlignUp(runs * 2 * sizeof(std::uint64_t)); }
  std::size_t query_bytes() const { return AlignUp(blocks * sizeof(std::uint64_t)); }
  std::size_t rank_bytes() const { return AlignUp(blocks * runs * sizeof(std::uint64_t)); }
  std::size_t small() const { return or_and_bytes() + query_bytes() + 2 * rank_bytes(); }
  // A run's keys, then (with positions) its own positions: on a GPU where runs stay there, on the host.
  std::size_t RunKeysBytes(std::size_t keys) const { return AlignUp(keys * device_key_bytes); }
  std::size_t RunBytes(std::size_t keys) const {
    return RunKeysBytes(keys) + (positions ? AlignUp(keys * kLocalPositionBytes) : 0);
  }
  std::size_t ResidentBytes(std::size_t d) const { return host_runs ? 0 : RunBytes(KeysOn(d)); }
  // Phase 2: one lane's buffers.
  std::size_t BlockLane() const { return 2 * block_buffer + block_local + 2 * block_positions + block_temp; }
  std::size_t DeviceBytes(std::size_t d) const { return ResidentBytes(d) + scratch + small(); }
};

absl::Status SizePlan(const KeyCoding& coding, std::size_t run_keys, std::size_t block_target, Plan& plan) {
  plan.runs = RoundUpTo(DivUp(plan.n, run_keys), plan.devices);
  plan.run_keys = DivUp(plan.n, plan.runs);
  plan.blocks = RoundUpTo(DivUp(plan.n, std::max<std::size_t>(block_target, 1)), plan.devices);
  plan.block_keys = DivUp(plan.n, plan.blocks);
  const std::size_t kb = plan.device_key_bytes;
  plan.run_alt = AlignUp(plan.run_keys * kb);
  plan.run_landing = plan.host_key_bytes < kb ? AlignUp(plan.run_keys * plan.host_key_bytes) : 0;
  plan.run_positions = plan.positions ? AlignUp(plan.run_keys * kLocalPositionBytes) : 0;
  ASSIGN_OR_RETURN(const std::size_t run_temp,
                   RadixTempBytes(coding.width(), plan.run_keys,
                                  plan.positions ? kernels::Payload::kIndexU32 : kernels::Payload::kNone));
  ASSIGN_OR_RETURN(const std::size_t block_temp,
                   RadixTempBytes(coding.width(), plan.block_keys,
                                  plan.positions ? kernels::Payload::kU64 : kernels::Payload::kNone));
  plan.run_temp = AlignUp(run_temp);
  plan.block_temp = AlignUp(block_temp);
  plan.block_buffer = AlignUp(plan.block_keys * kb);
  plan.block_local = plan.positions ? AlignUp(plan.block_keys * kLocalPositionBytes) : 0;
  plan.block_positions = plan.positions ? AlignUp(plan.block_keys * kPositionBytes) : 0;
  const std::size_t blocks_scratch = kLanes * plan.BlockLane();
  // Phase 1's buffers beside a run: the keys' second buffer, the positions' two (the first of which is
  // the run's own place where runs stay on the GPU), CUB's, the landing.
  const std::size_t run_scratch = plan.run_alt + 2 * plan.run_positions + plan.run_temp + plan.run_landing;
  if (plan.host_runs) {
    plan.run_lane = plan.run_alt + run_scratch;
    plan.scratch = std::max(kLanes * plan.run_lane, blocks_scratch);
  } else {
    plan.scratch = std::max(run_scratch, blocks_scratch);
  }
  return absl::OkStatus();
}

// Device memory a request may count on: its share under --cuda-memory-limit-bytes, else what the
// driver has free plus what the pool holds unused. The GPU must be the calling thread's.
std::size_t MemoryBudget(const DeviceContext& context) {
  std::size_t budget = 0;
  if (context.memory_limit_bytes() > 0) {
    const std::size_t used = context.PoolUsedByRequests();  // less other contexts' kept blocks (tests)
    budget = context.memory_limit_bytes() > used ? context.memory_limit_bytes() - used : 0;
  } else {
    const kernels::PoolCounters pool = context.pool().Counters();
    std::size_t free_bytes = 0, total_bytes = 0;
    if (!kernels::DeviceMemoryInfo(&free_bytes, &total_bytes).ok()) return 0;
    budget = free_bytes + (pool.reserved_bytes > pool.used_bytes ? pool.reserved_bytes - pool.used_bytes : 0);
  }
  return budget - budget / kMemoryMarginDivisor;
}

// The plan with the longest runs that fits every GPU's budget, or none (false); with the runs on the
// GPUs where some plan fits so, else on the host.
absl::StatusOr<bool> ChoosePlan(const KeyCoding& coding, std::size_t n, std::size_t max_run_keys,
                                const std::vector<std::size_t>& budgets, bool positions, bool host_runs, Plan& plan) {
  plan.n = n;
  plan.host_runs = host_runs;
  plan.positions = positions;
  plan.devices = budgets.size();
  plan.host_key_bytes = coding.key_bytes();
  plan.device_key_bytes = coding.device_key_bytes();
  const std::size_t first = std::min({max_run_keys, kLargestRunKeys, DivUp(n, plan.devices)});
  const std::size_t smallest = std::min(first, kSmallestRunKeys);
  for (std::size_t run = first; run >= smallest && run > 0; run /= 2) {
    if (RoundUpTo(DivUp(n, run), plan.devices) > static_cast<std::size_t>(kernels::kMaxSortedRuns)) return false;
    // Blocks of half a run where the runs stay on the GPUs (their scratch then is small beside the
    // keys). Where they are on the host the scratch is all a GPU holds: blocks of a run (fewer, larger
    // gathers), or smaller where a block's buffers (with positions, 28 bytes a key) do not fit beside.
    const std::size_t largest_block = host_runs ? run : std::max<std::size_t>(run / 2, 1);
    const std::size_t smallest_block = host_runs ? std::min(largest_block, kSmallestRunKeys) : largest_block;
    for (std::size_t block = largest_block; block >= smallest_block && block > 0; block /= 2) {
      RETURN_IF_ERROR(SizePlan(coding, run, block, plan));
      bool fits = true;
      for (std::size_t d = 0; d < plan.devices; ++d) fits = fits && plan.DeviceBytes(d) <= budgets[d];
      if (fits) return true;
    }
  }
  return false;
}

// Device and pinned host arrays of the searches, on one GPU.
struct Small {
  std::uint64_t* or_and = nullptr;  // two words per run: OR and AND of its ordered bits
  std::uint64_t* queries = nullptr;
  std::uint64_t* ranks_below = nullptr;  // [query][local run]
  std::uint64_t* ranks_at_or_below = nullptr;

  void Carve(std::byte* base, const Plan& plan) {
    or_and = reinterpret_cast<std::uint64_t*>(base);
    queries = reinterpret_cast<std::uint64_t*>(base + plan.or_and_bytes());
    ranks_below = reinterpret_cast<std::uint64_t*>(base + plan.or_and_bytes() + plan.query_bytes());
    ranks_at_or_below =
        reinterpret_cast<std::uint64_t*>(base + plan.or_and_bytes() + plan.query_bytes() + plan.rank_bytes());
  }
};

// One GPU's part of the sort: its slot (whose stream carries uploads, then every other block), a
// second stream (run sorts, searches, the other blocks), its buffers. Destroyed after waiting for both
// streams, so that no buffer is freed under work still queued.
struct Share {
  explicit Share(DeviceContext& c) : context(c) {}
  ~Share() {
    if (!lease) return;
    (void)kernels::UseDevice(context.ordinal());
    (void)upload().Synchronize();
    (void)sort.Synchronize();
  }
  Share(const Share&) = delete;
  Share& operator=(const Share&) = delete;

  const kernels::Stream& upload() const { return lease->slot().stream; }

  DeviceContext& context;
  std::optional<DeviceContext::Lease> lease;
  kernels::Stream sort;
  kernels::PinnedBuffer host_small_buffer;
  std::vector<kernels::DeviceAllocation> device;  // keys (where runs stay on the GPU), scratch, small
  std::vector<kernels::Event> landed;             // per local run: copied in and converted
  Small small, host;
  std::uint64_t or_bits = 0, and_bits = ~std::uint64_t{0};  // over this GPU's keys

  std::byte* keys() const { return device.size() == 3 ? device[0].as<std::byte>() : nullptr; }
  std::byte* scratch() const { return device[device.size() - 2].as<std::byte>(); }
  std::byte* small_arrays() const { return device.back().as<std::byte>(); }
};

// Pinned host memory for runs kept on the host (Plan::host_runs), one buffer a sort, kept after use for
// the next: the first sort of 4G keys under a 4 GiB limit took 2.1 s with touched buffers, of 4G keys with
// indices (32 GiB) 8.8 s, against 17-22 s with a cudaHostAlloc'd buffer a run (H200 host, 2026-11-29).
// At most half the host's memory is held; past that a sort takes the host merge.
PinnedPool& HostRuns() {
  static PinnedPool pool(
      [] {
        const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
        return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 2 : 0;
      }(),
      PinnedPool::Making::kTouchedByEveryCore);
  return pool;
}

// Runs `work(d)` for every GPU d, each on its own thread with its GPU selected (the first on the
// calling thread); the first error is what returns.
template <typename Work>
absl::Status ForEachGpu(std::vector<std::unique_ptr<Share>>& shares, Work work) {
  std::mutex mutex;
  absl::Status first_error;
  auto one = [&](std::size_t d) {
    absl::Status status = ToAbslStatus(kernels::UseDevice(shares[d]->context.ordinal()), "selecting the GPU");
    if (status.ok()) status = work(d);
    if (!status.ok()) {
      const std::lock_guard lock(mutex);
      if (first_error.ok()) first_error = std::move(status);
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t d = 1; d < shares.size(); ++d) threads.emplace_back(one, d);
  one(0);
  for (std::thread& t : threads) t.join();
  return first_error;
}

class MergedSort {
 public:
  MergedSort(const SortSpec& spec, const Plan& plan, std::vector<std::unique_ptr<Share>>& shares,
             std::span<const std::byte> keys_in, std::span<std::byte> keys_out, std::span<int64_t> positions_out,
             const std::vector<std::byte*>& host_runs)
      : coding_{spec.dtype, spec.order == SortOrder::kDescending},
        plan_(plan),
        shares_(shares),
        in_(keys_in),
        out_(keys_out),
        positions_out_(positions_out) {
    if (plan_.host_runs) {  // each run's keys, then its positions, in its own pinned buffer
      for (std::byte* run : host_runs) {
        run_keys_.push_back(run);
        run_positions_.push_back(run + plan_.RunKeysBytes(plan_.run_keys));
      }
      return;
    }
    for (std::size_t d = 0; d < shares_.size(); ++d) {  // each GPU's keys, then their positions
      std::byte* const positions = shares_[d]->keys() + plan_.RunKeysBytes(plan_.KeysOn(d));
      for (std::size_t r = plan_.FirstRun(d); r < plan_.FirstRun(d + 1); ++r) {
        const std::size_t offset = plan_.RunBegin(r) - plan_.RunBegin(plan_.FirstRun(d));
        run_keys_.push_back(shares_[d]->keys() + offset * plan_.device_key_bytes);
        run_positions_.push_back(positions + offset * kLocalPositionBytes);
      }
    }
  }

  // Phase 1: on every GPU at once, each of its runs crosses into place and is sorted there while the
  // next crosses.
  absl::Status SortRuns(const Cancellation& cancellation) {
    RETURN_IF_ERROR(ForEachGpu(shares_, [&](std::size_t d) { return SortRunsOn(d, cancellation); }));
    for (const auto& share : shares_) {
      or_bits_ |= share->or_bits;
      and_bits_ &= share->and_bits;
    }
    return absl::OkStatus();
  }

  // Phase 2: the splits, then on every GPU at once its blocks, each gathered, sorted and copied back.
  absl::Status MergeBlocks(const Cancellation& cancellation) {
    RETURN_IF_ERROR(FindSplits());
    return ForEachGpu(shares_, [&](std::size_t d) -> absl::Status {
      Share& share = *shares_[d];
      for (std::size_t j = plan_.FirstBlock(d); j < plan_.FirstBlock(d + 1); ++j) {
        const kernels::Stream& lane = (j - plan_.FirstBlock(d)) % kLanes == 0 ? share.upload() : share.sort;
        // The lane's last block is out before its buffers take the next (and a cancellation is seen).
        GPUSORT_RETURN_IF_KERNEL_ERROR(lane.Synchronize(), "merging on the device");
        RETURN_IF_ERROR(cancellation.Check());
        RETURN_IF_ERROR(SortBlock(share, j, (j - plan_.FirstBlock(d)) % kLanes, lane));
      }
      for (const kernels::Stream* s : {&share.upload(), static_cast<const kernels::Stream*>(&share.sort)}) {
        GPUSORT_RETURN_IF_KERNEL_ERROR(s->Synchronize(), "merging on the device");
      }
      return absl::OkStatus();
    });
  }

 private:
  std::size_t RunLength(std::size_t r) const { return plan_.RunBegin(r + 1) - plan_.RunBegin(r); }

  absl::Status SortRunsOn(std::size_t d, const Cancellation& cancellation) {
    Share& share = *shares_[d];
    const std::size_t first = plan_.FirstRun(d), end = plan_.FirstRun(d + 1);
    share.landed.resize(end - first);
    for (kernels::Event& e : share.landed) {
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::Event::Create(&e), "creating an event");
    }
    for (std::size_t i = 0; i < end - first; ++i) {
      share.host.or_and[2 * i] = 0;
      share.host.or_and[2 * i + 1] = ~std::uint64_t{0};
    }
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyToDeviceAsync(share.small.or_and, share.host.or_and,
                                                              (end - first) * 2 * sizeof(std::uint64_t),
                                                              share.upload()),
                                   "host to device");
    if (plan_.host_runs) return SortRunsThroughHost(share, first, end, cancellation);
    // The run's second buffers in scratch; its positions' first buffer is its place beside the keys.
    RETURN_IF_ERROR(UploadRun(share, first, first, run_keys_[first], RunBuffersAt(share.scratch(), nullptr, nullptr).landing,
                              share.upload()));
    for (std::size_t r = first; r < end; ++r) {
      RETURN_IF_ERROR(cancellation.Check());
      const RunBuffers buffers = RunBuffersAt(share.scratch(), run_keys_[r], run_positions_[r]);
      if (r + 1 < end) RETURN_IF_ERROR(UploadRun(share, first, r + 1, run_keys_[r + 1], buffers.landing, share.upload()));
      ASSIGN_OR_RETURN(const int result, SortRun(share, first, r, buffers, share.sort));
      if (result == 1) {  // back to the run's place
        GPUSORT_RETURN_IF_KERNEL_ERROR(
            kernels::CopyOnDeviceAsync(run_keys_[r], buffers.keys[1], RunLength(r) * plan_.device_key_bytes, share.sort),
            "device to device");
        if (plan_.positions) {
          GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyOnDeviceAsync(run_positions_[r], buffers.positions[1],
                                                                    RunLength(r) * kLocalPositionBytes, share.sort),
                                         "device to device");
        }
      }
    }
    GPUSORT_RETURN_IF_KERNEL_ERROR(share.sort.Synchronize(), "sorting the runs");
    return absl::OkStatus();
  }

  // Where one run sorts on a GPU: its keys and their second buffer, its positions' two buffers (with
  // positions), CUB's temporary storage, and where narrow keys land before they widen.
  struct RunBuffers {
    std::byte* keys[2] = {};
    std::byte* positions[2] = {};
    std::byte* temp = nullptr;
    std::byte* landing = nullptr;
  };
  // `base`: phase 1's scratch (the second buffers, a spare first positions buffer, CUB's, the landing);
  // keys and positions: the run's first buffers (null: the spare for positions).
  RunBuffers RunBuffersAt(std::byte* base, std::byte* keys, std::byte* positions) const {
    RunBuffers b;
    b.keys[0] = keys;
    b.keys[1] = base;
    b.positions[1] = base + plan_.run_alt;
    b.positions[0] = positions != nullptr ? positions : b.positions[1] + plan_.run_positions;
    b.temp = b.positions[1] + 2 * plan_.run_positions;
    b.landing = b.temp + plan_.run_temp;
    return b;
  }

  // Runs kept on the host: each crosses into a lane's buffer, is sorted there and crosses back to its
  // place in pinned host memory, all on the lane's stream. Two lanes, so that one run's keys come in
  // while the other's go out, each way over its own copy engine.
  absl::Status SortRunsThroughHost(Share& share, std::size_t first, std::size_t end,
                                   const Cancellation& cancellation) {
    for (std::size_t r = first; r < end; ++r) {
      const std::size_t i = r - first;
      const kernels::Stream& lane = i % kLanes == 0 ? share.upload() : share.sort;
      // The lane's last run is back on the host before its buffers take this one.
      GPUSORT_RETURN_IF_KERNEL_ERROR(lane.Synchronize(), "sorting the runs");
      RETURN_IF_ERROR(cancellation.Check());
      std::byte* const lane_base = share.scratch() + (i % kLanes) * plan_.run_lane;
      const RunBuffers buffers = RunBuffersAt(lane_base + plan_.run_alt, lane_base, nullptr);
      RETURN_IF_ERROR(UploadRun(share, first, r, buffers.keys[0], buffers.landing, lane));
      ASSIGN_OR_RETURN(const int result, SortRun(share, first, r, buffers, lane));
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(run_keys_[r], buffers.keys[result],
                                                           RunLength(r) * plan_.device_key_bytes, lane),
                                     "device to host");
      if (plan_.positions) {
        GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(run_positions_[r], buffers.positions[result],
                                                             RunLength(r) * kLocalPositionBytes, lane),
                                       "device to host");
      }
    }
    for (const kernels::Stream* s : {&share.upload(), static_cast<const kernels::Stream*>(&share.sort)}) {
      GPUSORT_RETURN_IF_KERNEL_ERROR(s->Synchronize(), "sorting the runs");
    }
    return absl::OkStatus();
  }

  // Run r's keys from the request into `to` on the GPU as ordered bits (narrow keys through `landing`),
  // with the OR and AND of its bits copied to the host.
  absl::Status UploadRun(Share& share, std::size_t first, std::size_t r, std::byte* to, std::byte* landing,
                         const kernels::Stream& stream) {
    const std::size_t len = RunLength(r), hb = plan_.host_key_bytes, i = r - first;
    const std::byte* from = in_.data() + plan_.RunBegin(r) * hb;
    std::uint64_t* or_and = share.small.or_and + 2 * i;
    if (plan_.run_landing > 0) {  // narrow keys land in scratch, then widen into place
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(landing, from, len * hb, stream), "host to device");
      GPUSORT_RETURN_IF_KERNEL_ERROR(
          kernels::WidenToOrderedBitsAsync(hb, coding_.kind(), coding_.complement, landing,
                                           reinterpret_cast<std::uint32_t*>(to), len, or_and, stream),
          "ordered bits");
    } else {
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(to, from, len * hb, stream), "host to device");
      GPUSORT_RETURN_IF_KERNEL_ERROR(
          kernels::ToOrderedBitsAsync(coding_.width(), coding_.kind(), coding_.complement, to, len, or_and, stream),
          "ordered bits");
    }
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::CopyToHostAsync(share.host.or_and + 2 * i, or_and, 2 * sizeof(std::uint64_t), stream),
        "device to host");
    GPUSORT_RETURN_IF_KERNEL_ERROR(share.landed[i].Record(stream), "recording an event");
    return absl::OkStatus();
  }

  // Queued on `stream` once run r has landed in buffers.keys[0] (the host waits for it: the bits that
  // vary in the run decide the sort's passes); returns which buffers then hold it sorted (with its own
  // positions, where wanted).
  absl::StatusOr<int> SortRun(Share& share, std::size_t first, std::size_t r, const RunBuffers& buffers,
                              const kernels::Stream& stream) {
    const std::size_t i = r - first;
    GPUSORT_RETURN_IF_KERNEL_ERROR(share.landed[i].Synchronize(), "copying a run in");
    const std::uint64_t run_or = share.host.or_and[2 * i], run_and = share.host.or_and[2 * i + 1];
    share.or_bits |= run_or;
    share.and_bits &= run_and;
    kernels::RadixSortArgs args;
    args.key_width = coding_.width();
    args.count = RunLength(r);
    VaryingBitRange(run_or ^ run_and, &args.begin_bit, &args.end_bit);
    if (args.end_bit <= args.begin_bit) {  // every key of the run is the same
      if (!plan_.positions) return 0;
      args.begin_bit = args.end_bit = 0;  // the sort then only writes the positions, in order
    }
    args.keys[0] = buffers.keys[0];
    args.keys[1] = buffers.keys[1];
    if (plan_.positions) {
      args.payload = kernels::Payload::kIndexU32;
      args.values[0] = buffers.positions[0];
      args.values[1] = buffers.positions[1];
    }
    int result = 0;
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSort(args, buffers.temp, plan_.run_temp, stream, &result),
                                   "radix sort");
    return result;
  }

  // Ranks of `queries` in every run, at or below them and (`both`) below them, laid out as
  // run_splits.h's RankInRuns gives them: each GPU searches its own runs, then the host lays each GPU's
  // [query][its runs] answers into [query][every run].
  // long-function: the searches on every GPU, then their answers gathered, read best in order
  absl::Status Rank(const std::vector<std::uint64_t>& queries, bool both, std::vector<std::uint64_t>& at_or_below,
                    std::vector<std::uint64_t>& below) {
    const std::size_t query_count = queries.size();
    for (std::size_t d = 0; d < shares_.size(); ++d) {
      Share& share = *shares_[d];
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::UseDevice(share.context.ordinal()), "selecting the GPU");
      kernels::SortedRuns runs;
      const std::size_t first = plan_.FirstRun(d);
      runs.count = static_cast<int>(plan_.FirstRun(d + 1) - first);
      for (int i = 0; i < runs.count; ++i) {
        runs.keys[i] = run_keys_[first + i];
        runs.length[i] = RunLength(first + i);
      }
      std::copy(queries.begin(), queries.end(), share.host.queries);
      const std::size_t rank_bytes = query_count * runs.count * sizeof(std::uint64_t);
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyToDeviceAsync(share.small.queries, share.host.queries,
                                                                query_count * sizeof(std::uint64_t), share.sort),
                                     "host to device");
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RankInSortedRunsAsync(coding_.width(), runs, share.small.queries,
                                                                    query_count, /*inclusive=*/true,
                                                                    share.small.ranks_at_or_below, share.sort),
                                     "searching the runs");
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyToHostAsync(share.host.ranks_at_or_below,
                                                              share.small.ranks_at_or_below, rank_bytes, share.sort),
                                     "device to host");
      if (both) {
        GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RankInSortedRunsAsync(coding_.width(), runs, share.small.queries,
                                                                      query_count, /*inclusive=*/false,
                                                                      share.small.ranks_below, share.sort),
                                       "searching the runs");
        GPUSORT_RETURN_IF_KERNEL_ERROR(
            kernels::CopyToHostAsync(share.host.ranks_below, share.small.ranks_below, rank_bytes, share.sort),
            "device to host");
      }
    }
    at_or_below.assign(query_count * plan_.runs, 0);
    below.assign(both ? query_count * plan_.runs : 0, 0);
    for (std::size_t d = 0; d < shares_.size(); ++d) {
      const Share& share = *shares_[d];
      GPUSORT_RETURN_IF_KERNEL_ERROR(share.sort.Synchronize(), "searching the runs");
      const std::size_t first = plan_.FirstRun(d), local = plan_.FirstRun(d + 1) - first;
      for (std::size_t q = 0; q < query_count; ++q) {
        for (std::size_t i = 0; i < local; ++i) {
          at_or_below[q * plan_.runs + first + i] = share.host.ranks_at_or_below[q * local + i];
          if (both) below[q * plan_.runs + first + i] = share.host.ranks_below[q * local + i];
        }
      }
    }
    return absl::OkStatus();
  }

  // Where every run splits at each block boundary (run_splits.h), the ranks searched on the GPUs.
  absl::Status FindSplits() {
    std::vector<std::size_t> lengths, positions;
    for (std::size_t r = 0; r < plan_.runs; ++r) lengths.push_back(RunLength(r));
    for (std::size_t j = 1; j < plan_.blocks; ++j) positions.push_back(plan_.BlockBegin(j));
    const RankInRuns rank = [this](const std::vector<std::uint64_t>& queries, bool both,
                                   std::vector<std::uint64_t>& at_or_below, std::vector<std::uint64_t>& below) {
      return Rank(queries, both, at_or_below, below);
    };
    ASSIGN_OR_RETURN(RunSplits splits, FindRunSplits(lengths, positions, or_bits_, and_bits_, rank));
    bounds_ = std::move(splits.bounds);
    splits_ = std::move(splits.at);
    return absl::OkStatus();
  }

  // long-function: one block's gather, sort, conversion and copy back, in stream order
  absl::Status SortBlock(Share& share, std::size_t j, std::size_t lane_index, const kernels::Stream& lane) {
    const std::size_t kb = plan_.device_key_bytes, hb = plan_.host_key_bytes, runs = plan_.runs;
    std::byte* const lane_base = share.scratch() + lane_index * plan_.BlockLane();
    std::byte* const buffer[2] = {lane_base, lane_base + plan_.block_buffer};
    std::byte* const local = lane_base + 2 * plan_.block_buffer;  // the runs' own positions, gathered
    std::byte* const positions[2] = {local + plan_.block_local, local + plan_.block_local + plan_.block_positions};
    std::byte* const temp = positions[1] + plan_.block_positions;
    const absl::Status disagree = absl::InternalError("the device merge's splits disagree with the runs");
    kernels::PieceBases pieces;
    std::size_t len = 0;
    for (std::size_t r = 0; r < runs; ++r) {
      const std::size_t from = splits_[j * runs + r], to = splits_[(j + 1) * runs + r];
      if (to < from || len + (to - from) > plan_.block_keys) return disagree;
      if (to == from) continue;
      // From this GPU's runs, another's by a peer copy, or the host.
      GPUSORT_RETURN_IF_KERNEL_ERROR(
          kernels::CopyAnyAsync(buffer[0] + len * kb, run_keys_[r] + from * kb, (to - from) * kb, lane),
          "gathering a block");
      if (plan_.positions) {
        if (pieces.count == kernels::kMaxPieces) return disagree;  // runs are at most kMaxSortedRuns
        GPUSORT_RETURN_IF_KERNEL_ERROR(
            kernels::CopyAnyAsync(local + len * kLocalPositionBytes, run_positions_[r] + from * kLocalPositionBytes,
                                  (to - from) * kLocalPositionBytes, lane),
            "gathering a block");
        pieces.begin[pieces.count] = len;
        pieces.base[pieces.count] = static_cast<std::int64_t>(plan_.RunBegin(r));
        pieces.begin[++pieces.count] = len + (to - from);
      }
      len += to - from;
    }
    if (len != plan_.BlockBegin(j + 1) - plan_.BlockBegin(j)) return disagree;
    if (plan_.positions) {  // the runs' own positions become the array's, in gathered order
      GPUSORT_RETURN_IF_KERNEL_ERROR(
          kernels::WidenPiecePositionsAsync(reinterpret_cast<const std::uint32_t*>(local), pieces,
                                            reinterpret_cast<std::int64_t*>(positions[0]), lane),
          "block positions");
    }
    // The block's keys lie between its two boundary keys: only the bits below their highest difference
    // (and above the lowest bit that varies anywhere) are sorted.
    kernels::RadixSortArgs args;
    args.key_width = coding_.width();
    args.count = len;
    int low_bit = 0, high_bit = 0;
    VaryingBitRange(or_bits_ ^ and_bits_, &low_bit, &high_bit);
    args.begin_bit = low_bit;
    args.end_bit = std::min(high_bit, 64 - std::countl_zero(bounds_[j] ^ bounds_[j + 1]));
    args.keys[0] = buffer[0];
    args.keys[1] = buffer[1];
    if (plan_.positions) {  // stable: equal keys keep their gathered order, which is the array's
      args.payload = kernels::Payload::kU64;
      args.values[0] = positions[0];
      args.values[1] = positions[1];
    }
    int result = 0;
    if (args.end_bit > args.begin_bit) {
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSort(args, temp, plan_.block_temp, lane, &result), "radix sort");
    }
    if (plan_.positions) {
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(positions_out_.data() + plan_.BlockBegin(j),
                                                           positions[result], len * kPositionBytes, lane),
                                     "device to host");
    }
    std::byte* const sorted = buffer[result];
    std::byte* const to = out_.data() + plan_.BlockBegin(j) * hb;
    if (hb < kb) {  // narrow keys: ordered bits back to keys in the other buffer, then out
      GPUSORT_RETURN_IF_KERNEL_ERROR(
          kernels::NarrowFromOrderedBitsAsync(hb, coding_.kind(), coding_.complement,
                                              reinterpret_cast<const std::uint32_t*>(sorted), buffer[1 - result], len,
                                              lane),
          "key bits");
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(to, buffer[1 - result], len * hb, lane), "device to host");
      return absl::OkStatus();
    }
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::FromOrderedBitsAsync(coding_.width(), coding_.kind(), coding_.complement, sorted, len, lane),
        "key bits");
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(to, sorted, len * kb, lane), "device to host");
    return absl::OkStatus();
  }

  const KeyCoding coding_;
  const Plan& plan_;
  std::vector<std::unique_ptr<Share>>& shares_;
  const std::span<const std::byte> in_;
  const std::span<std::byte> out_;
  const std::span<int64_t> positions_out_;  // with positions: the answer's indices
  std::vector<std::byte*> run_keys_;    // per run: where its keys lie on that GPU, or on the host
  std::vector<std::byte*> run_positions_;  // and, with positions, its own positions (uint32)
  std::uint64_t or_bits_ = 0, and_bits_ = ~std::uint64_t{0};  // over every key
  std::vector<std::uint64_t> bounds_;  // blocks + 1: block j's keys lie in [bounds_[j], bounds_[j + 1]]
  std::vector<std::size_t> splits_;    // (blocks + 1) x runs: block j takes [splits_[j][r], splits_[j + 1][r])
};

// Copies between the GPUs run peer to peer: the pools' memory mapped for every other GPU, once per pair
// for the process (the contexts and their pools live as long as it does). false where two of them
// cannot reach each other (their copies would cross the host twice).
bool ConnectPeers(const std::vector<std::unique_ptr<Share>>& shares) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> connected;  // (pool's GPU, GPU reaching it)
  const std::lock_guard lock(mutex);
  for (const auto& a : shares) {
    for (const auto& b : shares) {
      const std::pair<int, int> pair(a->context.ordinal(), b->context.ordinal());
      if (a == b || connected.contains(pair)) continue;
      if (!kernels::EnablePeerAccess(pair.second, pair.first).ok()) return false;
      if (!a->context.pool().AllowAccessFrom(pair.second).ok()) return false;
      connected.insert(pair);
    }
  }
  return true;
}

}  // namespace

bool SortMergesOnDevice(const SortSpec& spec) {
  return !spec.segmented() && (spec.payload == SortPayload::kNone || spec.payload == SortPayload::kIndices) &&
         (spec.algorithm == Algorithm::kAuto || spec.algorithm == Algorithm::kRadix);
}

// long-function: the plan, each GPU's lease and allocations, and the two phases, each timed, in order
absl::StatusOr<bool> SortMergedOnDevices(std::span<DeviceContext* const> contexts, const SortSpec& spec,
                                         std::size_t count, std::span<const std::byte> keys_in,
                                         std::span<std::byte> keys_out, std::span<int64_t> indices_out,
                                         std::size_t max_run_keys, const Cancellation& cancellation,
                                         ExecutionReport& report) {
  if (!SortMergesOnDevice(spec) || contexts.empty() || count < 2 * contexts.size()) return false;
  const KeyCoding coding{spec.dtype, spec.order == SortOrder::kDescending};
  const bool positions = spec.payload == SortPayload::kIndices;
  if (keys_in.size() < count * coding.key_bytes() || keys_out.size() < count * coding.key_bytes() ||
      (positions && indices_out.size() < count)) {
    return absl::InternalError("the device merge was given fewer bytes than keys");
  }
  // Slots are leased in the GPUs' order, so that two such sorts never wait on each other's GPUs.
  std::vector<DeviceContext*> ordered(contexts.begin(), contexts.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const DeviceContext* a, const DeviceContext* b) { return a->ordinal() < b->ordinal(); });
  // Host runs' memory, declared before the shares so that it outlives their streams' work.
  std::optional<PinnedPool::Loan> host_memory;
  std::vector<std::unique_ptr<Share>> shares;
  for (DeviceContext* context : ordered) shares.push_back(std::make_unique<Share>(*context));
  if (shares.size() > 1 && !ConnectPeers(shares)) shares.resize(1);

  const StageClock wait;
  std::vector<DeviceContext*> leased;
  for (auto& share : shares) leased.push_back(&share->context);
  ASSIGN_OR_RETURN(std::vector<DeviceContext::Lease> leases, LeaseSlots(leased));  // in the GPUs' order, as shares
  std::vector<std::size_t> budgets;
  for (std::size_t d = 0; d < shares.size(); ++d) {
    const std::unique_ptr<Share>& share = shares[d];
    share->lease.emplace(std::move(leases[d]));
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::UseDevice(share->context.ordinal()), "selecting the GPU");
    // A sticky error left by earlier work surfaces here as what it is (the sizing below would meet it
    // as an unrelated cudaErrorInvalidDevice, which does not mark the GPU lost).
    GPUSORT_RETURN_IF_KERNEL_ERROR(share->upload().Synchronize(), "checking the GPU");
    budgets.push_back(MemoryBudget(share->context));
  }
  report.AddStage(Stage::kStreamWait, wait.Seconds());
  Plan plan;
  ASSIGN_OR_RETURN(bool fits, ChoosePlan(coding, count, max_run_keys, budgets, positions, /*host_runs=*/false, plan));
  if (!fits) {
    ASSIGN_OR_RETURN(fits, ChoosePlan(coding, count, max_run_keys, budgets, positions, /*host_runs=*/true, plan));
  }
  if (!fits) return false;
  std::vector<std::byte*> host_runs;
  if (plan.host_runs) {  // one mapping, each run at its own place in it
    std::optional<PinnedPool::Loan> taken = HostRuns().Take(plan.runs * plan.RunBytes(plan.run_keys));
    if (!taken) return false;  // no pinned memory for the runs: the host merge serves it
    host_memory.emplace(std::move(*taken));
    for (std::size_t r = 0; r < plan.runs; ++r) {
      host_runs.push_back(host_memory->bytes().data() + r * plan.RunBytes(plan.run_keys));
    }
  }

  for (std::size_t d = 0; d < shares.size(); ++d) {
    Share& share = *shares[d];
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::UseDevice(share.context.ordinal()), "selecting the GPU");
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::Stream::Create(&share.sort), "creating a stream");
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::PinnedBuffer::Allocate(plan.small(), &share.host_small_buffer),
                                   "pinned host memory");
    std::vector<std::size_t> sizes = {plan.scratch, plan.small()};
    if (!plan.host_runs) sizes.insert(sizes.begin(), plan.ResidentBytes(d));
    const absl::Status allocated = share.context.AllocateAll(share.upload(), sizes, &share.device);
    if (absl::IsResourceExhausted(allocated)) return false;  // the host merge then serves it
    RETURN_IF_ERROR(allocated);
    share.small.Carve(share.small_arrays(), plan);
    share.host.Carve(share.host_small_buffer.data(), plan);
  }

  report.algorithm = Algorithm::kRadix;
  MergedSort sort(spec, plan, shares, keys_in, keys_out, indices_out, host_runs);
  const StageClock runs;
  RETURN_IF_ERROR(sort.SortRuns(cancellation));
  report.AddStage(Stage::kH2d, runs.Seconds());
  const StageClock merging;
  RETURN_IF_ERROR(sort.MergeBlocks(cancellation));
  report.AddStage(Stage::kDeviceMerge, merging.Seconds());
  report.device.clear();
  for (const auto& share : shares) {
    const kernels::DeviceProperties& p = share->context.properties();
    report.device += std::string(report.device.empty() ? "" : ", ") + "cuda:" + std::to_string(p.ordinal) + " " + p.name;
  }
  return true;
}

}  // namespace gpusort
