// MergeSort: a stable Merge Path merge sort (the design of CUB's DeviceMergeSort and ModernGPU).
//
// 1. Block sort: each block takes a tile of kSortThreads * kItems keys (coalesced, through shared
//    memory), each thread sorts its kItems keys in registers with a sorting network (Knuth's merge
//    exchange: 74 compare-exchanges for 17 keys where odd-even transposition takes 136), then
//    log2(kSortThreads) merge rounds in shared memory double the sorted runs until the tile is one
//    run; rounds whose runs lie inside one warp synchronise the warp only. Large inputs take 1024
//    threads a block (4-byte keys alone) or 512, so the tile is 4 or 2 merge tiles and two or one
//    global passes fewer are needed (a round in shared memory costs less than a pass through global
//    memory); small ones take 256 threads, so that there are blocks enough for every SM. A partial
//    last tile is padded with the largest key; padding sits after every real key in input order, so a
//    stable sort leaves it after them and it is never written.
// 2. Global merge passes: runs of width w = block-sort tile, 2 tiles, 4 tiles ... are merged in pairs,
//    one kernel a pass. Every output tile of kMergeThreads * kItems keys has one block: two of its
//    warps find where the tile starts and ends in the pair's two runs (a Merge Path search in global
//    memory, 32 probes at once, so about log32 of the run width rounds of loads), then the block loads
//    exactly the keys its tile needs (coalesced) and merges them in shared memory like a block-sort
//    round.
// Kernels after the first are launched with programmatic dependent launch: each waits for the one
// before it (griddepcontrol.wait) before touching memory, but its blocks may be placed on SMs while
// the last blocks of the previous pass still run, which hides the launch gap between passes.
// Keys ping-pong between args.keys and temp; the block sort writes to whichever buffer makes the last
// pass land in args.keys, so nothing is copied back. Every merge sends ties to the left run, so the
// sort is stable, and positions (written as 0..count-1 by the block sort and carried with the keys)
// come out exactly as std::stable_sort orders them. The in-register network is not stable by itself:
// with positions it compares (key, position) pairs, which are all distinct.
#include <climits>
#include <cstdint>
#include <utility>

#include "cuda_status.h"
#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/sorted_runs.h"
#include "merge_path.cuh"

namespace gpusort::kernels {
namespace {

// Threads of a global-merge block, and of a block-sort block for small inputs.
constexpr int kMergeThreads = 256;
constexpr int kSmallSortThreads = 256;

// Items per thread: odd, so that a thread reading its own kItems consecutive keys in shared memory
// hits a different bank from its neighbours; fewer for 8-byte keys to keep registers and shared
// memory per thread near those of 4-byte keys. The same in block sort and merge, as in CUB.
template <typename Key>
constexpr int ItemsPerThread() {
  return sizeof(Key) == 4 ? 17 : 11;
}

template <typename Key>
constexpr int MergeTileItems() {
  return kMergeThreads * ItemsPerThread<Key>();
}

template <typename Key, int kSortThreads>
constexpr int SortTileItems() {
  return kSortThreads * ItemsPerThread<Key>();
}

// Threads of a block-sort block for large inputs: 1024 where two such blocks fit an SM (4-byte keys
// alone need 32 registers a thread), else 512 (two blocks at 64 registers). Measured on the H100 at 16M
// 4-byte keys: the block sort of 1024 threads takes 216 us at two blocks an SM and 263 us at one; with
// positions 512 threads beat 1024 (1.395 ms against 1.417 ms for the whole sort).
template <typename Key, bool kValues>
constexpr int LargeSortThreads() {
  return sizeof(Key) == 4 && !kValues ? 1024 : 512;
}

// Large block-sort tiles from 128 tiles of 1024 threads on (2.2M 4-byte keys, 1.4M 8-byte ones), about
// one block an SM. Below, more and smaller blocks keep every SM busy, and the extra merge passes are
// short. Measured on the H100: 4M 4-byte keys sort in 0.163 ms with large tiles against 0.171 ms with
// small ones, 1M in 0.068 ms with small tiles against 0.075 ms.
template <typename Key>
constexpr std::int64_t LargeSortFrom() {
  return std::int64_t{128} * 1024 * ItemsPerThread<Key>();
}

// Block-sort blocks an SM should hold, which caps registers a thread: 4-byte keys alone fit 32
// registers (two 1024-thread blocks, or 1536 threads of smaller ones at 40 registers); others need up
// to 64 (1024 threads).
template <typename Key, bool kValues, int kSortThreads>
constexpr int BlockSortMinBlocks() {
  if constexpr (sizeof(Key) == 4 && !kValues) return kSortThreads == 1024 ? 2 : 1536 / kSortThreads;
  return 1024 / kSortThreads;
}

// Merge blocks an SM should hold, which caps registers a thread. For large inputs as many as fit
// without spilling much, to overlap one block's loads with another's merging (4-byte keys alone: 8
// blocks at 32 registers; measured 0.757 ms against 0.783 ms at 6 blocks for 16M keys). Small inputs
// have fewer tiles than the GPU has places for, so each block's own latency counts: 6 blocks at 40
// registers (1M keys: 0.068 ms against 0.083 ms at 8).
template <typename Key, bool kValues, bool kLargeInput>
constexpr int MergeMinBlocks() {
  if constexpr (kValues) return 5;
  return sizeof(Key) == 4 && kLargeInput ? 8 : 6;
}

// Block sort's shared memory: the tile's keys, then its positions, each with one item of slack (once for
// SerialMerge's read-ahead, which now stays inside its runs; kept so that the layout and occupancy are
// the ones measured in BENCHMARKS.md).
template <typename Key, bool kValues, int kSortThreads>
constexpr std::size_t BlockSortSharedBytes() {
  return (SortTileItems<Key, kSortThreads>() + 1) * (sizeof(Key) + (kValues ? sizeof(std::uint32_t) : 0));
}

template <typename Key>
__device__ __forceinline__ Key LargestKey() {
  return static_cast<Key>(~Key{0});
}

// Programmatic dependent launch (sm_90): wait until the grid before this one in the stream has finished
// and its writes are visible; let the next grid's blocks be placed once every block of this one runs.
// Both are no-ops for a grid launched in plain stream order.
__device__ __forceinline__ void WaitForPreviousGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void LetNextGridLaunch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Knuth's merge exchange (TAOCP 5.2.2, Algorithm M; Batcher's odd-even merge for any n) as a list of
// compare-exchanges (first[c], second[c]), first < second, built at compile time.
template <int kItems>
struct SortingNetwork {
  static_assert(kItems >= 2);
  int first[kItems * kItems] = {};
  int second[kItems * kItems] = {};
  int size = 0;
  constexpr SortingNetwork() {
    int t = 0;
    while ((1 << t) < kItems) ++t;
    for (int p = 1 << (t - 1); p > 0; p /= 2) {
      int q = 1 << (t - 1);
      int r = 0;
      int d = p;
      while (d > 0) {
        for (int i = 0; i + d < kItems; ++i) {
          if ((i & p) == r) {
            first[size] = i;
            second[size] = i + d;
            ++size;
          }
        }
        d = q - p;
        q /= 2;
        r = p;
      }
    }
  }
};

template <int kItems>
inline constexpr SortingNetwork<kItems> kNetwork{};

// Puts keys[I] and keys[J] (I < J) in order. Keys alone: min and max (equal keys are the same bits).
// With values: by (key, value), so that the unstable network still gives the stable order.
template <bool kValues, int I, int J, int kItems, typename Key>
__device__ __forceinline__ void CompareExchange(Key (&keys)[kItems], std::uint32_t (&values)[kItems]) {
  const Key ki = keys[I];
  const Key kj = keys[J];
  if constexpr (kValues) {
    const std::uint32_t vi = values[I];
    const std::uint32_t vj = values[J];
    const bool swap = kj < ki || (kj == ki && vj < vi);
    keys[I] = swap ? kj : ki;
    keys[J] = swap ? ki : kj;
    values[I] = swap ? vj : vi;
    values[J] = swap ? vi : vj;
  } else {
    keys[I] = kj < ki ? kj : ki;
    keys[J] = kj < ki ? ki : kj;
  }
}

template <bool kValues, int kItems, typename Key, int... C>
__device__ __forceinline__ void ApplyNetwork(Key (&keys)[kItems], std::uint32_t (&values)[kItems],
                                             std::integer_sequence<int, C...>) {
  (CompareExchange<kValues, kNetwork<kItems>.first[C], kNetwork<kItems>.second[C]>(keys, values), ...);
}

// Sorts one thread's keys (and values) in registers: every index is a compile-time constant.
template <bool kValues, int kItems, typename Key>
__device__ __forceinline__ void SortInRegisters(Key (&keys)[kItems], std::uint32_t (&values)[kItems]) {
  ApplyNetwork<kValues>(keys, values, std::make_integer_sequence<int, kNetwork<kItems>.size>{});
}

// Writes a thread's kItems registers to shared memory in blocked order (thread t owns
// [t * kItems, (t + 1) * kItems)), the layout every merge round reads.
template <int kItems, typename T>
__device__ __forceinline__ void StoreBlocked(const T (&items)[kItems], T* shared) {
#pragma unroll
  for (int i = 0; i < kItems; ++i) shared[threadIdx.x * kItems + i] = items[i];
}

// Copies the first n items of a tile from shared memory to global memory, striped so that a warp's
// stores are contiguous.
template <int kThreads, int kItems, bool kFull, typename T>
__device__ __forceinline__ void StoreTile(const T* shared, T* out, int n) {
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int j = i * kThreads + threadIdx.x;
    if (kFull || j < n) out[j] = shared[j];
  }
}

// Before and after a block-sort round's shared-memory store: runs of up to 32 threads' items belong to
// one warp, which reads and writes only its own part of the tile.
__device__ __forceinline__ void SyncRound(int merged_threads) {
  if (merged_threads <= 32) {
    __syncwarp();
  } else {
    __syncthreads();
  }
}

// Sorts each tile of `in` into the same tile of `out` (which may be `in`: a block reads its whole
// tile into shared memory before it writes any of it, and touches no other tile). With kValues, the
// positions tile_start + i are made here and written to out_values.
template <typename Key, bool kValues, int kSortThreads>
__global__ void __launch_bounds__(kSortThreads, (BlockSortMinBlocks<Key, kValues, kSortThreads>()))
    BlockSortKernel(const Key* in, Key* out, std::uint32_t* out_values, int count) {
  constexpr int kItems = ItemsPerThread<Key>();
  constexpr int kTile = SortTileItems<Key, kSortThreads>();
  extern __shared__ __align__(16) unsigned char block_sort_shared[];
  Key* shared_keys = reinterpret_cast<Key*>(block_sort_shared);
  std::uint32_t* shared_values = reinterpret_cast<std::uint32_t*>(shared_keys + kTile + 1);

  LetNextGridLaunch();
  WaitForPreviousGrid();
  const int tile_start = static_cast<int>(blockIdx.x) * kTile;
  const int n = count - tile_start < kTile ? count - tile_start : kTile;

  // Coalesced load, padding the tile with the largest key; then each thread takes its blocked share.
  Key keys[kItems];
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int j = i * kSortThreads + threadIdx.x;
    keys[i] = j < n ? in[tile_start + j] : LargestKey<Key>();
  }
#pragma unroll
  for (int i = 0; i < kItems; ++i) shared_keys[i * kSortThreads + threadIdx.x] = keys[i];
  __syncthreads();
  std::uint32_t values[kItems];
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    keys[i] = shared_keys[threadIdx.x * kItems + i];
    if constexpr (kValues) values[i] = static_cast<std::uint32_t>(tile_start + threadIdx.x * kItems + i);
  }
  SortInRegisters<kValues>(keys, values);

  // Round r merges pairs of runs of `merged / 2` threads' items; thread `lane` of a group of `merged`
  // threads makes outputs [lane * kItems, (lane + 1) * kItems) of its group's merge.
#pragma unroll 1
  for (int merged = 2; merged <= kSortThreads; merged *= 2) {
    SyncRound(merged);  // the group has finished reading the previous round's shared memory
    StoreBlocked(keys, shared_keys);
    if constexpr (kValues) StoreBlocked(values, shared_values);
    SyncRound(merged);
    const int run = kItems * (merged / 2);
    const int a = (threadIdx.x & ~(merged - 1)) * kItems;
    const int diag = (threadIdx.x & (merged - 1)) * kItems;
    const int split = MergePath(shared_keys + a, run, shared_keys + a + run, run, diag);
    int from[kItems];
    SerialMerge<false>(shared_keys, kTile, a + split, a + run, a + run + diag - split, a + 2 * run, keys, from);
    if constexpr (kValues) {
#pragma unroll
      for (int i = 0; i < kItems; ++i) values[i] = shared_values[from[i]];
    }
  }

  __syncthreads();
  StoreBlocked(keys, shared_keys);
  if constexpr (kValues) StoreBlocked(values, shared_values);
  __syncthreads();
  StoreTile<kSortThreads, kItems, false>(shared_keys, out + tile_start, n);
  if constexpr (kValues) StoreTile<kSortThreads, kItems, false>(shared_values, out_values + tile_start, n);
}

// Loads a merge tile made of run[a_offset, a_offset + a_count) followed by run[b_offset + a_count,
// b_offset + n) into shared memory, striped and coalesced; all loads are issued before any store, so
// each thread has kItems requests in flight. Offsets are from the pair's start, so tile item j is
// run[j + a_offset] or run[j + b_offset].
template <int kItems, bool kFull, typename T>
__device__ __forceinline__ void LoadMergeTile(const T* __restrict__ run, int a_offset, int a_count, int b_offset,
                                              int n, T* shared) {
  T items[kItems];
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int j = i * kMergeThreads + threadIdx.x;
    if (kFull || j < n) items[i] = run[j + (j < a_count ? a_offset : b_offset)];
  }
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int j = i * kMergeThreads + threadIdx.x;
    if (kFull || j < n) shared[j] = items[i];
  }
}

// One output tile of a global merge pass, once its share of the two runs is known: its keys (and
// values) from both runs into shared memory, then each thread merges kItems of them as in a
// block-sort round, and the tile is stored coalesced. kFull: the tile has all kTile items (every tile
// but the array's last).
template <typename Key, bool kValues, bool kFull>
__device__ __forceinline__ void MergeTile(const Key* __restrict__ in, const std::uint32_t* __restrict__ in_values,
                                          Key* __restrict__ out, std::uint32_t* __restrict__ out_values,
                                          int pair_start, int a_offset, int a_count, int b_offset, int n,
                                          Key* shared_keys, std::uint32_t* shared_values) {
  constexpr int kItems = ItemsPerThread<Key>();
  constexpr int kTile = MergeTileItems<Key>();
  LoadMergeTile<kItems, kFull>(in + pair_start, a_offset, a_count, b_offset, n, shared_keys);
  if constexpr (kValues) {
    LoadMergeTile<kItems, kFull>(in_values + pair_start, a_offset, a_count, b_offset, n, shared_values);
  }
  __syncthreads();

  // Threads past the tile's end (a short last tile) merge from the end: nothing valid, nothing stored.
  const int diag = kFull || static_cast<int>(threadIdx.x) * kItems < n ? threadIdx.x * kItems : n;
  const int split = MergePath(shared_keys, a_count, shared_keys + a_count, n - a_count, diag);
  Key keys[kItems];
  int from[kItems];
  SerialMerge<!kFull>(shared_keys, n, split, a_count, a_count + diag - split, n, keys, from);
  std::uint32_t values[kItems];
  if constexpr (kValues) {
#pragma unroll
    for (int i = 0; i < kItems; ++i) values[i] = shared_values[from[i]];
  }

  __syncthreads();
  StoreBlocked(keys, shared_keys);
  if constexpr (kValues) StoreBlocked(values, shared_values);
  __syncthreads();
  const int out_start = static_cast<int>(blockIdx.x) * kTile;
  StoreTile<kMergeThreads, kItems, kFull>(shared_keys, out + out_start, n);
  if constexpr (kValues) StoreTile<kMergeThreads, kItems, kFull>(shared_values, out_values + out_start, n);
}

// Where an output tile [diag_start, diag_start + n) of the merge of runs a = [0, a_length) and b (right
// after it) starts and ends in run a, into shared_splits[0] and [1]: warp 0 searches for the start, warp 1
// for the end. Every thread of the block calls it (it ends with a barrier).
template <typename Key>
__device__ __forceinline__ void FindTileSplits(const Key* a, int a_length, int b_length, int diag_start, int n,
                                               int* shared_splits) {
  if (threadIdx.x < 64) {
    const int diag = threadIdx.x < 32 ? diag_start : diag_start + n;
    const int split = WarpMergePath(a, a_length, a + a_length, b_length, diag);
    if (threadIdx.x % 32 == 0) shared_splits[threadIdx.x / 32] = split;
  }
  __syncthreads();
}

// One output tile of a global merge pass over runs of (kTile << log2_run_tiles) keys. Merge tiles
// divide block-sort tiles, so a tile never spans two pairs of runs.
//
// The split search is done here rather than in a kernel of its own before each pass: measured on the
// H100 at 16M keys, a separate kernel (one warp a split, launched the same way) made the sort 0.815 ms
// against 0.783 ms.
template <typename Key, bool kValues, int kMinBlocks>
__global__ void __launch_bounds__(kMergeThreads, kMinBlocks)
    MergeKernel(const Key* __restrict__ in, const std::uint32_t* __restrict__ in_values, Key* __restrict__ out,
                std::uint32_t* __restrict__ out_values, int count, int log2_run_tiles) {
  constexpr int kTile = MergeTileItems<Key>();
  __shared__ Key shared_keys[kTile + 1];
  __shared__ std::uint32_t shared_values[kValues ? kTile + 1 : 1];
  __shared__ int shared_splits[2];

  LetNextGridLaunch();
  WaitForPreviousGrid();

  // Where the tile lies: pair (a, b) of runs, and outputs [diag_start, diag_start + n) of its merge.
  // All offsets fit an int: they are below count.
  const int tile = static_cast<int>(blockIdx.x);
  const int tile_in_pair = tile & ((2 << log2_run_tiles) - 1);
  const int pair_start = (tile - tile_in_pair) * kTile;
  const int pair_left = count - pair_start;
  const int run = kTile << log2_run_tiles;  // below count: a pass runs only while runs are shorter
  const int a_length = run < pair_left ? run : pair_left;
  const int b_length = run < pair_left - a_length ? run : pair_left - a_length;
  const int diag_start = tile_in_pair * kTile;
  const int n = kTile < a_length + b_length - diag_start ? kTile : a_length + b_length - diag_start;

  FindTileSplits(in + pair_start, a_length, b_length, diag_start, n, shared_splits);
  const int split_start = shared_splits[0];
  const int a_count = shared_splits[1] - split_start;
  // Tile item j < a_count is a[split_start + j], the others b[diag_start - split_start + j - a_count].
  const int b_offset = a_length + diag_start - split_start - a_count;
  if (n == kTile) {
    MergeTile<Key, kValues, true>(in, in_values, out, out_values, pair_start, split_start, a_count, b_offset, n,
                                  shared_keys, shared_values);
  } else {
    MergeTile<Key, kValues, false>(in, in_values, out, out_values, pair_start, split_start, a_count, b_offset, n,
                                   shared_keys, shared_values);
  }
}

// The stable merge of two sorted runs that lie one after the other, [0, first) and [first, count) of
// `in`, into `out` (MergeTwoSortedRuns): a global merge pass whose one pair of runs is the whole array,
// the first run of any length. Keys alone.
template <typename Key>
__global__ void __launch_bounds__(kMergeThreads, (MergeMinBlocks<Key, false, true>()))
    MergeTwoRunsKernel(const Key* __restrict__ in, Key* __restrict__ out, int count, int first, int diag_begin,
                       int diag_end) {
  constexpr int kTile = MergeTileItems<Key>();
  __shared__ Key shared_keys[kTile + 1];
  __shared__ int shared_splits[2];
  // Output [diag_begin, diag_end) only (a slice of the merge, MergeTwoSortedRunsSlice); `out` points at
  // output diag_begin, where this grid's first tile goes.
  const int diag_start = diag_begin + static_cast<int>(blockIdx.x) * kTile;
  const int n = kTile < diag_end - diag_start ? kTile : diag_end - diag_start;
  FindTileSplits(in, first, count - first, diag_start, n, shared_splits);
  const int split_start = shared_splits[0];
  const int a_count = shared_splits[1] - split_start;
  const int b_offset = first + diag_start - split_start - a_count;
  if (n == kTile) {
    MergeTile<Key, false, true>(in, nullptr, out, nullptr, 0, split_start, a_count, b_offset, n, shared_keys, nullptr);
  } else {
    MergeTile<Key, false, false>(in, nullptr, out, nullptr, 0, split_start, a_count, b_offset, n, shared_keys,
                                 nullptr);
  }
}

template <typename Key>
Status LaunchMergeTwoRuns(const void* runs, std::size_t first, std::size_t count, void* out, std::size_t out_begin,
                          std::size_t out_end, cudaStream_t stream) {
  constexpr std::size_t kTile = MergeTileItems<Key>();
  const auto tiles = static_cast<unsigned>((out_end - out_begin + kTile - 1) / kTile);
  MergeTwoRunsKernel<Key><<<tiles, kMergeThreads, 0, stream>>>(
      static_cast<const Key*>(runs), static_cast<Key*>(out) + out_begin, static_cast<int>(count),
      static_cast<int>(first), static_cast<int>(out_begin), static_cast<int>(out_end));
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("merge of two sorted runs");
  return Status::Ok();
}

// Temp: count keys, then count positions (when asked for), 256-byte aligned. A single merge tile is one
// block-sort tile: it needs no merge pass and so no temp at all.
struct TempLayout {
  std::size_t positions_offset = 0;
  std::size_t bytes = 0;
};

std::size_t RoundUp256(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

template <typename Key>
TempLayout LayoutOf(const KeySortArgs& args) {
  TempLayout layout;
  if (args.count <= static_cast<std::size_t>(MergeTileItems<Key>())) return layout;
  layout.positions_offset = RoundUp256(args.count * sizeof(Key));
  layout.bytes = layout.positions_offset + (args.positions ? RoundUp256(args.count * 4) : 0);
  return layout;
}

// Launches kernel in stream order, or (after_previous_grid) with programmatic dependent launch: it may
// start while the previous grid ends, and waits for it inside (WaitForPreviousGrid).
template <typename... Params, typename... Args>
cudaError_t Launch(void (*kernel)(Params...), unsigned grid, unsigned block, std::size_t shared_bytes,
                   bool after_previous_grid, cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = after_previous_grid ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
}

template <typename Key, bool kValues, int kSortThreads>
Status Sort(const KeySortArgs& args, const TempLayout& layout, void* temp, cudaStream_t stream) {
  constexpr int kSortTile = SortTileItems<Key, kSortThreads>();
  constexpr int kMergeTile = MergeTileItems<Key>();
  constexpr int kMergeMinBlocks = MergeMinBlocks<Key, kValues, (kSortThreads > kSmallSortThreads)>();
  static_assert(kSortTile % kMergeTile == 0 && (kSortThreads & (kSortThreads - 1)) == 0);
  const int count = static_cast<int>(args.count);
  int passes = 0;
  for (std::int64_t width = kSortTile; width < count; width *= 2) ++passes;
  auto* temp_base = static_cast<char*>(temp);
  Key* keys[2] = {static_cast<Key*>(args.keys), reinterpret_cast<Key*>(temp_base)};
  std::uint32_t* values[2] = {args.positions,
                              kValues && passes > 0
                                  ? reinterpret_cast<std::uint32_t*>(temp_base + layout.positions_offset)
                                  : nullptr};
  // Buffer 0 is args.keys / args.positions, 1 is temp; every pass flips. The block sort writes to 0
  // when an even number of passes follows and to 1 when odd, so the last pass lands in 0, no copy.
  int current = passes % 2;
  auto* block_sort = BlockSortKernel<Key, kValues, kSortThreads>;
  constexpr std::size_t kSortShared = BlockSortSharedBytes<Key, kValues, kSortThreads>();
  GPUSORT_CUDA_RETURN_IF_ERROR(
      cudaFuncSetAttribute(block_sort, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSortShared)));
  const auto sort_tiles = static_cast<unsigned>((count + kSortTile - 1) / kSortTile);
  GPUSORT_CUDA_RETURN_IF_ERROR(Launch(block_sort, sort_tiles, kSortThreads, kSortShared, false, stream, keys[0],
                                      keys[current], values[current], count));

  const auto merge_tiles = static_cast<unsigned>((count + kMergeTile - 1) / kMergeTile);
  int log2_run_tiles = 0;
  while ((kMergeTile << log2_run_tiles) < kSortTile) ++log2_run_tiles;
  for (int pass = 0; pass < passes; ++pass, ++log2_run_tiles) {
    GPUSORT_CUDA_RETURN_IF_ERROR(Launch(MergeKernel<Key, kValues, kMergeMinBlocks>, merge_tiles, kMergeThreads, 0,
                                        true, stream, keys[current], values[current], keys[1 - current],
                                        values[1 - current], count, log2_run_tiles));
    current = 1 - current;
  }
  if (current != 0) return Status(StatusCode::kInternal, "merge sort ended outside args.keys");
  return Status::Ok();
}

Status CheckCount(const KeySortArgs& args) {
  if (args.count > static_cast<std::size_t>(INT_MAX)) {
    return Status(StatusCode::kInvalidArgument, "merge sort of more than 2^31-1 keys");
  }
  return Status::Ok();
}

template <typename Key, bool kValues>
Status SortOfSize(const KeySortArgs& args, const TempLayout& layout, void* temp, cudaStream_t stream) {
  if (static_cast<std::int64_t>(args.count) >= LargeSortFrom<Key>()) {
    return Sort<Key, kValues, LargeSortThreads<Key, kValues>()>(args, layout, temp, stream);
  }
  return Sort<Key, kValues, kSmallSortThreads>(args, layout, temp, stream);
}

template <typename Key>
Status SortOfWidth(const KeySortArgs& args, void* temp, std::size_t temp_bytes, cudaStream_t stream) {
  const TempLayout layout = LayoutOf<Key>(args);
  if (layout.bytes > 0 && (temp == nullptr || temp_bytes < layout.bytes)) {
    return Status(StatusCode::kInvalidArgument, "merge sort temporary storage is smaller than MergeSortTempBytes");
  }
  return args.positions ? SortOfSize<Key, true>(args, layout, temp, stream)
                        : SortOfSize<Key, false>(args, layout, temp, stream);
}

}  // namespace

Status MergeSortTempBytes(const KeySortArgs& args, std::size_t* bytes) {
  *bytes = 0;
  GPUSORT_KERNELS_RETURN_IF_ERROR(RefuseKeyWidth16(args.key_width, "merge sort"));
  GPUSORT_KERNELS_RETURN_IF_ERROR(CheckCount(args));
  *bytes = args.key_width == KeyWidth::k32 ? LayoutOf<std::uint32_t>(args).bytes : LayoutOf<std::uint64_t>(args).bytes;
  return Status::Ok();
}

Status MergeSort(const KeySortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(RefuseKeyWidth16(args.key_width, "merge sort"));
  GPUSORT_KERNELS_RETURN_IF_ERROR(CheckCount(args));
  if (args.count == 0) return Status::Ok();
  if (args.keys == nullptr) return Status(StatusCode::kInvalidArgument, "merge sort without keys");
  return args.key_width == KeyWidth::k32
             ? SortOfWidth<std::uint32_t>(args, temp, temp_bytes, Native(stream))
             : SortOfWidth<std::uint64_t>(args, temp, temp_bytes, Native(stream));
}

Status MergeTwoSortedRuns(KeyWidth width, const void* runs, std::size_t first, std::size_t count, void* out,
                          const Stream& stream) {
  return MergeTwoSortedRunsSlice(width, runs, first, count, out, 0, count, stream);
}

Status MergeTwoSortedRunsSlice(KeyWidth width, const void* runs, std::size_t first, std::size_t count, void* out,
                               std::size_t out_begin, std::size_t out_end, const Stream& stream) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(RefuseKeyWidth16(width, "the merge of two sorted runs"));
  if (count > static_cast<std::size_t>(INT_MAX) || first > count) {
    return Status(StatusCode::kInvalidArgument, "merge of two sorted runs: at most 2^31-1 keys, first run inside them");
  }
  if (out_begin > out_end || out_end > count) {
    return Status(StatusCode::kInvalidArgument, "merge of two sorted runs: the output slice lies outside the keys");
  }
  if (out_begin == out_end) return Status::Ok();
  const cudaStream_t s = Native(stream);
  return width == KeyWidth::k32 ? LaunchMergeTwoRuns<std::uint32_t>(runs, first, count, out, out_begin, out_end, s)
                                : LaunchMergeTwoRuns<std::uint64_t>(runs, first, count, out, out_begin, out_end, s);
}

}  // namespace gpusort::kernels
