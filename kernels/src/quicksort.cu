// QUICKSORT: quicksort with dynamic parallelism, under CUDA 12+ (CDP2) rules: no device-side
// cudaDeviceSynchronize; children are fire-and-forget launches; a grid is complete only once every grid
// it launched is, so the host stream's next kernel runs after the whole launch tree.
//
//   1. A grid of blocks partitions a large range [lo, hi) from one buffer into the other: every block
//      takes the same pivot (the median of 63 keys spread over the range), splits its 4096-key tile
//      three ways, and claims room for its "<" keys at the front and its ">" keys at the back with one
//      64-bit atomic on the range's counters. Keys equal to the pivot are not moved at all: the last block
//      to finish fills the middle with the pivot (with positions, the only equal element is the pivot
//      itself, (key, position) pairs being unique). All-equal and few-distinct inputs therefore take
//      one pass per distinct key.
//   2. That last block launches the grids for the "<" and ">" sides from the device (fire-and-forget).
//      A side of at most max(4096, n/256) keys gets no grid: it goes on a work list.
//   3. After the tree, a host-launched kernel sorts the work list, one block per range: ranges of up to
//      4096 keys with a bitonic network in shared memory, larger ones (when n > 1M) with an iterative
//      quicksort of that one block (the same tile partition, an explicit stack in shared memory).
//
// Every result lands in the caller's arrays: a range sorted in shared memory is written there, and so is
// every "equal" middle; the temp buffers only hold ranges in flight. Ranges in flight are disjoint, so
// no two writers ever meet.
//
// Limits (quicksort_limits.h). The device runtime keeps every device launch in a fixed pool
// (cudaLimitDevRuntimePendingLaunchCount, 2048 by default; CDP2 has no overflow pool: a launch past it
// fails). Giving grids only to ranges above n/256 keys (about 300-400 grids per sort) and capping the
// device launches of one sort at 768 keeps a sort, and two at once, inside the default pool, so the limit
// is never raised: raising it is device-wide, reserves device memory for good, and the runtime wants it
// set while the device is idle, which a server running other streams cannot promise. A launch that fails
// anyway (several sorts at once) costs only speed: its range goes on the work list. Grids nest at most
// 20 deep (the runtime's limit is 24) and one block's quicksort 40 deep; a range past either limit goes
// to a non-recursive fallback (a range too deep for a grid to the work list, one too deep for a block
// to a bitonic network sort of that range, O(m log^2 m)), so no input goes quadratic.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>

#include "cuda_status.h"
#include "gpusort/kernels/comparison_sorts.h"
#include "quicksort_blocks.cuh"
#include "quicksort_limits.h"

namespace gpusort::kernels {
namespace {

using quicksort::Buffers;
using quicksort::Elem;
using quicksort::kLeafMax;
using quicksort::kThreads;
using quicksort::kTile;
using quicksort::PartitionShared;

constexpr QuicksortLimits kDefaultLimits{};
constexpr unsigned kLaunchBudget = kDefaultLimits.launch_budget;
constexpr unsigned kGridSpread = 256;          // ranges above n / kGridSpread keys get a grid
constexpr unsigned kFillGridMin = 1u << 16;    // a longer run of pivot-equal keys gets a fill grid
constexpr unsigned kBatchBlocks = 1024;        // blocks of the work-list kernel (each takes ranges in turn)

// Counters of one sort, zeroed before it starts.
struct Control {
  unsigned launches;   // device launches reserved so far (their ids: 1, 2, ...)
  unsigned items;      // ranges on the work list
  unsigned next_item;  // the next work-list range a block of the work-list kernel takes
  unsigned unused;
};

// One partition grid's counters: "<" keys in the low half of lt_gt, ">" keys in the high half (each at
// most 2^31 - 1, so the halves never carry into each other), and blocks done.
struct Slot {
  unsigned long long lt_gt;
  unsigned ticket;
  unsigned unused;
};

struct WorkItem {
  unsigned lo, hi;
  int parity;
  unsigned unused;
};

// Each partition grid (the root, then at most kLaunchBudget more) puts at most its two sides on the list.
constexpr unsigned kItemCapacity = 2 * (kLaunchBudget + 1);

struct Context {
  Control* control;
  Slot* slots;  // [0]: the root grid; [id]: the grid of device launch `id`
  WorkItem* items;
  unsigned grid_min;  // ranges of more keys than this get a grid of their own
  unsigned launch_budget;
  int max_grid_depth;
};

struct Job {
  unsigned lo, hi;
  unsigned slot;
  int depth;
  int parity;  // the range is in buffer `parity`
  int iota;    // the root: positions are the indices
};

std::atomic<int> g_max_grid_depth{kDefaultLimits.max_grid_depth};
std::atomic<int> g_max_block_depth{kDefaultLimits.max_block_depth};
std::atomic<unsigned> g_launch_budget{kDefaultLimits.launch_budget};

__host__ __device__ constexpr unsigned Blocks(unsigned keys) { return (keys + kTile - 1) / kTile; }

template <typename Key>
__global__ void FillKernel(Key* keys, unsigned lo, unsigned hi, Key value) {
  for (unsigned long long i = lo + blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < hi;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    keys[i] = value;
  }
}

template <typename Key, bool kPos>
__global__ void __launch_bounds__(kThreads, 2) PartitionKernel(Buffers<Key> b, Context ctx, Job job);

// The id (1, 2, ...) of one more device launch, or 0 once the sort's budget is spent.
__device__ unsigned ReserveLaunch(const Context& ctx) {
  const unsigned id = atomicAdd(&ctx.control->launches, 1u) + 1;
  return id <= ctx.launch_budget ? id : 0;
}

__device__ void PushItem(const Context& ctx, unsigned lo, unsigned hi, int parity) {
  const unsigned i = atomicAdd(&ctx.control->items, 1u);
  if (i < kItemCapacity) ctx.items[i] = WorkItem{lo, hi, parity, 0};  // always true: see kItemCapacity
}

// Hands one side of a partitioned range on: a grid of its own when it is large, shallow enough and the
// budget allows, the work list otherwise (and when the launch fails: the pool is shared by the device).
template <typename Key, bool kPos>
__device__ void Spawn(const Buffers<Key>& b, const Context& ctx, unsigned lo, unsigned hi, int parity, int depth) {
  if (lo == hi) return;
  const unsigned m = hi - lo;
  if (m > ctx.grid_min && depth <= ctx.max_grid_depth) {
    const unsigned id = ReserveLaunch(ctx);
    if (id != 0) {
      PartitionKernel<Key, kPos>
          <<<Blocks(m), kThreads, 0, cudaStreamFireAndForget>>>(b, ctx, Job{lo, hi, id, depth, parity, 0});
      if (cudaGetLastError() == cudaSuccess) return;
    }
  }
  PushItem(ctx, lo, hi, parity);
}

// Writes the keys equal to the pivot, [eq_lo, eq_hi), to their final place; run by a whole block. With
// positions that is the pivot alone. A long run gets a fill grid when `ctx` allows launches.
template <typename Key, bool kPos>
__device__ void FillEqual(const Buffers<Key>& b, const Context* ctx, const Elem<Key>& pivot, unsigned eq_lo,
                          unsigned eq_hi, PartitionShared<Key>& sm) {
  if constexpr (kPos) {
    if (threadIdx.x == 0) quicksort::StoreElem<Key, true>(b, 0, eq_lo, pivot);
  } else {
    if (threadIdx.x == 0) {
      sm.flag = 0;
      if (ctx != nullptr && eq_hi - eq_lo > kFillGridMin && ReserveLaunch(*ctx) != 0) {
        const unsigned blocks = min((eq_hi - eq_lo + 2047) / 2048, 4096u);
        FillKernel<Key><<<blocks, 256, 0, cudaStreamFireAndForget>>>(b.keys[0], eq_lo, eq_hi, pivot.key);
        sm.flag = cudaGetLastError() == cudaSuccess;
      }
    }
    __syncthreads();
    if (!sm.flag) {
      for (unsigned i = eq_lo + threadIdx.x; i < eq_hi; i += kThreads) b.keys[0][i] = pivot.key;
    }
  }
  __syncthreads();
}

// One grid per large range: block i partitions tile i; the last block to finish writes the equal
// middle and launches the two sides.
template <typename Key, bool kPos>
__global__ void __launch_bounds__(kThreads, 2) PartitionKernel(Buffers<Key> b, Context ctx, Job job) {
  __shared__ PartitionShared<Key> sm;
  __shared__ int last;
  const Elem<Key> pivot = quicksort::ChoosePivot<Key, kPos>(b, job.parity, job.iota, job.lo, job.hi, sm);
  const unsigned tile_lo = job.lo + blockIdx.x * kTile;
  const unsigned tile_hi = job.hi - tile_lo < kTile ? job.hi : tile_lo + kTile;
  Slot* slot = ctx.slots + job.slot;
  quicksort::PartitionTile<Key, kPos>(
      b, job.parity, job.iota, tile_lo, tile_hi, pivot, job.lo, job.hi, sm,
      [slot](unsigned lt, unsigned gt, unsigned* lt_base, unsigned* gt_base) {
        const unsigned long long before = atomicAdd(&slot->lt_gt, (static_cast<unsigned long long>(gt) << 32) | lt);
        *lt_base = static_cast<unsigned>(before);
        *gt_base = static_cast<unsigned>(before >> 32);
      });
  // Every block's keys are in place (and visible) before it counts itself done, so the last one sees
  // them all, and so do the grids it launches.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&slot->ticket, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  if (threadIdx.x == 0) {
    __threadfence();
    sm.totals = atomicAdd(&slot->lt_gt, 0ull);
  }
  __syncthreads();
  const auto lt = static_cast<unsigned>(sm.totals), gt = static_cast<unsigned>(sm.totals >> 32);
  FillEqual<Key, kPos>(b, &ctx, pivot, job.lo + lt, job.hi - gt, sm);
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    Spawn<Key, kPos>(b, ctx, job.lo, job.lo + lt, 1 - job.parity, job.depth + 1);
    Spawn<Key, kPos>(b, ctx, job.hi - gt, job.hi, 1 - job.parity, job.depth + 1);
  }
}

// ---- The work list: one block per range ----

constexpr int kStackEntries = kDefaultLimits.max_block_depth + 2;  // one pending side per depth, plus two

struct StackEntry {
  unsigned lo, hi;
  int depth;
  int parity;
  int iota;
};

template <typename Key>
struct BlockShared {
  PartitionShared<Key> part;
  StackEntry stack[kStackEntries];
  int top;
  unsigned item;
};

// One block partitions [e.lo, e.hi) tile after tile (running offsets instead of atomics), writes the
// equal middle, and pushes the two sides.
template <typename Key, bool kPos>
__device__ void PartitionInBlock(const Buffers<Key>& b, const StackEntry& e, BlockShared<Key>& sm) {
  const Elem<Key> pivot = quicksort::ChoosePivot<Key, kPos>(b, e.parity, e.iota, e.lo, e.hi, sm.part);
  if (threadIdx.x == 0) {
    sm.part.run_lt = 0;
    sm.part.run_gt = 0;
  }
  for (unsigned t = e.lo; t < e.hi; t += kTile) {
    quicksort::PartitionTile<Key, kPos>(
        b, e.parity, e.iota, t, e.hi - t < kTile ? e.hi : t + kTile, pivot, e.lo, e.hi, sm.part,
        [&sm](unsigned lt, unsigned gt, unsigned* lt_base, unsigned* gt_base) {
          *lt_base = sm.part.run_lt;
          *gt_base = sm.part.run_gt;
          sm.part.run_lt += lt;
          sm.part.run_gt += gt;
        });
  }
  const unsigned lt = sm.part.run_lt, gt = sm.part.run_gt;  // published by PartitionTile's barriers
  FillEqual<Key, kPos>(b, nullptr, pivot, e.lo + lt, e.hi - gt, sm.part);
  if (threadIdx.x == 0) {
    if (gt > 0) sm.stack[sm.top++] = StackEntry{e.hi - gt, e.hi, e.depth + 1, 1 - e.parity, 0};
    if (lt > 0) sm.stack[sm.top++] = StackEntry{e.lo, e.lo + lt, e.depth + 1, 1 - e.parity, 0};
  }
}

// Sorts [lo, hi) of buffer `parity` into the caller's arrays with one block: depth-first, at most one
// pending side per depth on the stack.
template <typename Key, bool kPos>
__device__ void SortRangeInBlock(const Buffers<Key>& b, unsigned lo, unsigned hi, int parity, bool iota, int max_depth,
                                 BlockShared<Key>& sm, Key* sk, std::uint32_t* sp) {
  if (threadIdx.x == 0) {
    sm.stack[0] = StackEntry{lo, hi, 0, parity, iota ? 1 : 0};
    sm.top = 1;
  }
  __syncthreads();
  while (sm.top > 0) {
    const StackEntry e = sm.stack[sm.top - 1];
    __syncthreads();
    if (threadIdx.x == 0) --sm.top;
    if (e.hi - e.lo <= kLeafMax) {
      quicksort::LeafSort<Key, kPos>(b, e.parity, e.iota != 0, e.lo, e.hi, sk, sp);
    } else if (e.depth >= max_depth) {
      quicksort::NetworkSort<Key, kPos>(b, e.parity, e.iota != 0, e.lo, e.hi, sk, sp);
    } else {
      PartitionInBlock<Key, kPos>(b, e, sm);
    }
    __syncthreads();
  }
}

// After the launch tree: each block takes work-list ranges until none is left. With root_count > 0
// there is no tree (the whole input is one small range) and block 0 sorts [0, root_count).
template <typename Key, bool kPos>
__global__ void __launch_bounds__(kThreads, 2)
    WorkListKernel(Buffers<Key> b, Context ctx, unsigned root_count, int max_block_depth) {
  extern __shared__ __align__(16) unsigned char leaf_shared[];  // kLeafMax keys, then their positions
  __shared__ BlockShared<Key> sm;
  Key* sk = reinterpret_cast<Key*>(leaf_shared);
  std::uint32_t* sp = kPos ? reinterpret_cast<std::uint32_t*>(sk + kLeafMax) : nullptr;
  if (root_count > 0) {
    if (blockIdx.x == 0) SortRangeInBlock<Key, kPos>(b, 0, root_count, 0, true, max_block_depth, sm, sk, sp);
    return;
  }
  const unsigned count = min(ctx.control->items, kItemCapacity);
  for (;;) {
    if (threadIdx.x == 0) sm.item = atomicAdd(&ctx.control->next_item, 1u);
    __syncthreads();
    const unsigned i = sm.item;
    __syncthreads();
    if (i >= count) return;
    const WorkItem w = ctx.items[i];
    SortRangeInBlock<Key, kPos>(b, w.lo, w.hi, w.parity, false, max_block_depth, sm, sk, sp);
  }
}

// ---- Host side ----

constexpr std::size_t RoundUp(std::size_t bytes) { return (bytes + 255) / 256 * 256; }
constexpr std::size_t kControlBytes = sizeof(Control) + (kLaunchBudget + 1) * sizeof(Slot);

// temp: the second key buffer, the second position buffer, the counters, the work list.
struct Layout {
  std::size_t keys = 0, positions = 0, control = 0, items = 0, total = 0;
};

Layout LayoutFor(const KeySortArgs& a) {
  Layout l;
  if (a.count <= 1) return l;  // nothing to sort
  const std::size_t key_bytes = a.key_width == KeyWidth::k32 ? 4 : 8;
  std::size_t at = 0;
  l.keys = at;
  at += RoundUp(a.count * key_bytes);
  l.positions = at;
  if (a.positions != nullptr) at += RoundUp(a.count * sizeof(std::uint32_t));
  l.control = at;
  at += RoundUp(kControlBytes);
  l.items = at;
  at += RoundUp(kItemCapacity * sizeof(WorkItem));
  l.total = at;
  return l;
}

Status Validate(const KeySortArgs& a) {
  if (a.count > static_cast<std::size_t>(INT_MAX)) {
    return Status(StatusCode::kInvalidArgument, "quicksort of more than 2^31-1 keys");
  }
  if (a.count > 0 && a.keys == nullptr) return Status(StatusCode::kInvalidArgument, "quicksort without keys");
  return Status::Ok();
}

template <typename Key, bool kPos>
Status Run(const KeySortArgs& a, char* temp, const Layout& l, cudaStream_t stream) {
  const auto n = static_cast<unsigned>(a.count);
  Buffers<Key> b{};
  b.keys[0] = static_cast<Key*>(a.keys);
  b.keys[1] = reinterpret_cast<Key*>(temp + l.keys);
  if constexpr (kPos) {
    b.pos[0] = a.positions;
    b.pos[1] = reinterpret_cast<std::uint32_t*>(temp + l.positions);
  }
  Context ctx{};
  ctx.control = reinterpret_cast<Control*>(temp + l.control);
  ctx.slots = reinterpret_cast<Slot*>(temp + l.control + sizeof(Control));
  ctx.items = reinterpret_cast<WorkItem*>(temp + l.items);
  ctx.grid_min = std::max(kLeafMax, (n + kGridSpread - 1) / kGridSpread);
  ctx.launch_budget = g_launch_budget.load();
  ctx.max_grid_depth = g_max_grid_depth.load();
  const int max_block_depth = g_max_block_depth.load();

  GPUSORT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(ctx.control, 0, kControlBytes, stream));
  // 48 KiB for 64-bit keys with positions, plus the static shared memory: past the default 48 KiB cap.
  const std::size_t leaf_bytes = kLeafMax * (sizeof(Key) + (kPos ? sizeof(std::uint32_t) : 0));
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(WorkListKernel<Key, kPos>,
                                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                    static_cast<int>(leaf_bytes)));
  if (n <= kLeafMax) {
    WorkListKernel<Key, kPos><<<1, kThreads, leaf_bytes, stream>>>(b, ctx, n, max_block_depth);
    GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("quicksort small-input kernel");
    return Status::Ok();
  }
  PartitionKernel<Key, kPos><<<Blocks(n), kThreads, 0, stream>>>(b, ctx, Job{0, n, 0, 0, 0, 1});
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("quicksort partition kernel");
  WorkListKernel<Key, kPos><<<kBatchBlocks, kThreads, leaf_bytes, stream>>>(b, ctx, 0, max_block_depth);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("quicksort work-list kernel");
  return Status::Ok();
}

}  // namespace

void SetQuicksortLimitsForTesting(const QuicksortLimits& limits) {
  g_max_grid_depth = std::clamp(limits.max_grid_depth, 0, kDefaultLimits.max_grid_depth);
  g_max_block_depth = std::clamp(limits.max_block_depth, 0, kDefaultLimits.max_block_depth);
  g_launch_budget = std::min(limits.launch_budget, kDefaultLimits.launch_budget);
}

Status QuicksortTempBytes(const KeySortArgs& args, std::size_t* bytes) {
  *bytes = 0;
  GPUSORT_KERNELS_RETURN_IF_ERROR(Validate(args));
  *bytes = LayoutFor(args).total;
  return Status::Ok();
}

Status Quicksort(const KeySortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(Validate(args));
  const Layout l = LayoutFor(args);
  if (temp_bytes < l.total || (l.total > 0 && temp == nullptr)) {
    return Status(StatusCode::kInvalidArgument, "quicksort temporary storage too small");
  }
  const cudaStream_t s = Native(stream);
  if (args.count == 0) return Status::Ok();
  if (args.count == 1) {
    if (args.positions != nullptr) GPUSORT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(args.positions, 0, 4, s));
    return Status::Ok();
  }
  char* t = static_cast<char*>(temp);
  const bool pos = args.positions != nullptr;
  if (args.key_width == KeyWidth::k32) {
    return pos ? Run<std::uint32_t, true>(args, t, l, s) : Run<std::uint32_t, false>(args, t, l, s);
  }
  return pos ? Run<std::uint64_t, true>(args, t, l, s) : Run<std::uint64_t, false>(args, t, l, s);
}

}  // namespace gpusort::kernels
