// MergeSort: a stable Merge Path merge sort (the design of CUB's DeviceMergeSort and ModernGPU).
//
// 1. Block sort: each block takes a tile of kThreads * kItems keys (coalesced, through shared memory),
//    each thread sorts its kItems keys in registers with odd-even transposition (stable, no indexing
//    at run time), then log2(kThreads) merge rounds in shared memory double the sorted runs until the
//    tile is one run. A partial last tile is padded with the largest key; padding sits after every real
//    key in input order, so a stable sort leaves it after them and it is never written.
// 2. Global merge passes: runs of width w = tile, 2 tile, 4 tile ... are merged in pairs. Every output
//    tile has one block; a small kernel first finds each tile's starting split with one Merge Path
//    search in global memory, then the merge kernel loads exactly the keys its tile needs (coalesced)
//    and merges them in shared memory like a block-sort round.
// Keys ping-pong between args.keys and temp; the block sort writes to whichever buffer makes the last
// pass land in args.keys, so nothing is copied back. Every merge sends ties to the left run, so the
// sort is stable, and positions (written as 0..count-1 by the block sort and carried with the keys)
// come out exactly as std::stable_sort orders them.
#include <climits>
#include <cstdint>

#include "cuda_status.h"
#include "gpusort/kernels/comparison_sorts.h"
#include "merge_path.cuh"

namespace gpusort::kernels {
namespace {

constexpr int kThreads = 256;

// Items per thread: odd, so that a thread reading its own kItems consecutive keys in shared memory
// hits a different bank from its neighbours; fewer for 8-byte keys to keep registers and shared
// memory per block near those of 4-byte keys (at most 256 * 17 * 8 = 34 KiB with positions).
template <typename Key>
constexpr int ItemsPerThread() {
  return sizeof(Key) == 4 ? 17 : 11;
}

template <typename Key>
constexpr int TileItems() {
  return kThreads * ItemsPerThread<Key>();
}

template <typename Key>
__device__ __forceinline__ Key LargestKey() {
  return static_cast<Key>(~Key{0});
}

// Stable sort of one thread's keys in registers: odd-even transposition swaps only neighbours that
// are strictly out of order, and kItems rounds sort kItems keys. Fully unrolled, so the arrays stay
// in registers.
template <bool kValues, int kItems, typename Key>
__device__ __forceinline__ void SortInRegisters(Key (&keys)[kItems], std::uint32_t (&values)[kItems]) {
#pragma unroll
  for (int round = 0; round < kItems; ++round) {
#pragma unroll
    for (int j = round & 1; j + 1 < kItems; j += 2) {
      if (keys[j + 1] < keys[j]) {
        const Key k = keys[j];
        keys[j] = keys[j + 1];
        keys[j + 1] = k;
        if constexpr (kValues) {
          const std::uint32_t v = values[j];
          values[j] = values[j + 1];
          values[j + 1] = v;
        }
      }
    }
  }
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
template <int kItems, typename T>
__device__ __forceinline__ void StoreTile(const T* shared, T* out, int n) {
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int j = i * kThreads + threadIdx.x;
    if (j < n) out[j] = shared[j];
  }
}

// Loads a tile made of a[0, a_count) followed by b[0, n - a_count) into shared memory, striped and
// coalesced; all loads are issued before any store, so each thread has kItems requests in flight.
// b_shifted is b - a_count (still inside the array: b's run follows a's), so item j of the tile is
// a[j] or b_shifted[j] and each load picks a base rather than computing two addresses.
template <int kItems, typename T>
__device__ __forceinline__ void LoadTile(const T* a, int a_count, const T* b_shifted, int n, T* shared) {
  T items[kItems];
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int j = i * kThreads + threadIdx.x;
    if (j < n) items[i] = (j < a_count ? a : b_shifted)[j];
  }
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int j = i * kThreads + threadIdx.x;
    if (j < n) shared[j] = items[i];
  }
}

// Sorts each tile of `in` into the same tile of `out` (which may be `in`: a block reads its whole
// tile into shared memory before it writes any of it, and touches no other tile). With kValues, the
// positions tile_start + i are made here and written to out_values.
template <typename Key, bool kValues>
__global__ void __launch_bounds__(kThreads, 2)
    BlockSortKernel(const Key* in, Key* out, std::uint32_t* out_values, std::int64_t count) {
  constexpr int kItems = ItemsPerThread<Key>();
  constexpr int kTile = TileItems<Key>();
  __shared__ Key shared_keys[kTile];
  __shared__ std::uint32_t shared_values[kValues ? kTile : 1];

  const std::int64_t tile_start = std::int64_t{blockIdx.x} * kTile;
  const int n = static_cast<int>(count - tile_start < kTile ? count - tile_start : kTile);

  // Coalesced load, padding the tile with the largest key; then each thread takes its blocked share.
  Key keys[kItems];
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int j = i * kThreads + threadIdx.x;
    keys[i] = j < n ? in[tile_start + j] : LargestKey<Key>();
  }
#pragma unroll
  for (int i = 0; i < kItems; ++i) shared_keys[i * kThreads + threadIdx.x] = keys[i];
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
  for (int merged = 2; merged <= kThreads; merged *= 2) {
    __syncthreads();  // everyone has finished reading the previous round's shared memory
    StoreBlocked(keys, shared_keys);
    if constexpr (kValues) StoreBlocked(values, shared_values);
    __syncthreads();
    const int run = kItems * (merged / 2);
    const int a = (threadIdx.x & ~(merged - 1)) * kItems;
    const int diag = (threadIdx.x & (merged - 1)) * kItems;
    const int split = MergePath(shared_keys + a, run, shared_keys + a + run, run, diag);
    int from[kItems];
    SerialMerge(shared_keys, kTile, a + split, a + run, a + run + diag - split, a + 2 * run, keys, from);
    if constexpr (kValues) {
#pragma unroll
      for (int i = 0; i < kItems; ++i) values[i] = shared_values[from[i]];
    }
  }

  __syncthreads();
  StoreBlocked(keys, shared_keys);
  if constexpr (kValues) StoreBlocked(values, shared_values);
  __syncthreads();
  StoreTile<kItems>(shared_keys, out + tile_start, n);
  if constexpr (kValues) StoreTile<kItems>(shared_values, out_values + tile_start, n);
}

// Where a global merge pass's output tile `tile` starts: the pair of runs (a, b) it lies in, its
// output range [diag_start, diag_end) within that pair's merge, and the pair's lengths.
struct TileInPair {
  std::int64_t a_start;  // b starts at a_start + a_length
  int a_length, b_length;
  int diag_start, diag_end;
};

__device__ __forceinline__ TileInPair LocateTile(std::int64_t tile, int tile_items, std::int64_t count,
                                                 std::int64_t width) {
  TileInPair t;
  const std::int64_t start = tile * tile_items;
  t.a_start = start / (2 * width) * (2 * width);  // widths are tile multiples: a tile never spans pairs
  const std::int64_t a_end = t.a_start + width < count ? t.a_start + width : count;
  const std::int64_t b_end = a_end + width < count ? a_end + width : count;
  t.a_length = static_cast<int>(a_end - t.a_start);
  t.b_length = static_cast<int>(b_end - a_end);
  t.diag_start = static_cast<int>(start - t.a_start);
  const int pair_length = t.a_length + t.b_length;
  t.diag_end = pair_length - t.diag_start < tile_items ? pair_length : t.diag_start + tile_items;
  return t;
}

// splits[t]: how many of tile t's pair's first diag_start outputs come from run a.
template <typename Key>
__global__ void PartitionKernel(const Key* keys, std::int64_t count, std::int64_t width, std::int64_t tiles,
                                int* splits) {
  const std::int64_t tile = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  if (tile >= tiles) return;
  const TileInPair t = LocateTile(tile, TileItems<Key>(), count, width);
  const Key* a = keys + t.a_start;
  splits[tile] = static_cast<int>(MergePath<std::int64_t>(a, t.a_length, a + t.a_length, t.b_length,
                                                          t.diag_start));
}

// One output tile of a global merge pass: its keys (and values) from both runs into shared memory,
// then each thread merges kItems of them as in a block-sort round, and the tile is stored coalesced.
template <typename Key, bool kValues>
__global__ void __launch_bounds__(kThreads, 2)
    MergeKernel(const Key* __restrict__ in, const std::uint32_t* __restrict__ in_values, Key* __restrict__ out,
                std::uint32_t* __restrict__ out_values, std::int64_t count, std::int64_t width,
                const int* __restrict__ splits) {
  constexpr int kItems = ItemsPerThread<Key>();
  constexpr int kTile = TileItems<Key>();
  __shared__ Key shared_keys[kTile];
  __shared__ std::uint32_t shared_values[kValues ? kTile : 1];

  const TileInPair t = LocateTile(blockIdx.x, kTile, count, width);
  // The tile ends where the next one starts, or, last in its pair, after all of both runs.
  const int split_start = splits[blockIdx.x];
  const int split_end = t.diag_end == t.a_length + t.b_length ? t.a_length : splits[blockIdx.x + 1];
  const int a_count = split_end - split_start;
  const int n = t.diag_end - t.diag_start;
  const std::int64_t a_from = t.a_start + split_start;
  // Where b's share starts, less a_count: >= t.a_start + t.diag_start, since split_end <= a_length.
  const std::int64_t b_from_shifted = t.a_start + t.a_length + (t.diag_start - split_start) - a_count;

  LoadTile<kItems>(in + a_from, a_count, in + b_from_shifted, n, shared_keys);
  if constexpr (kValues) {
    LoadTile<kItems>(in_values + a_from, a_count, in_values + b_from_shifted, n, shared_values);
  }
  __syncthreads();

  // Threads past the tile's end (a short last tile) merge from the end: nothing valid, nothing stored.
  const int diag = threadIdx.x * kItems < n ? threadIdx.x * kItems : n;
  const int split = MergePath(shared_keys, a_count, shared_keys + a_count, n - a_count, diag);
  Key keys[kItems];
  int from[kItems];
  SerialMerge(shared_keys, n, split, a_count, a_count + diag - split, n, keys, from);
  std::uint32_t values[kItems];
  if constexpr (kValues) {
#pragma unroll
    for (int i = 0; i < kItems; ++i) values[i] = shared_values[from[i]];
  }

  __syncthreads();
  StoreBlocked(keys, shared_keys);
  if constexpr (kValues) StoreBlocked(values, shared_values);
  __syncthreads();
  const std::int64_t out_start = std::int64_t{blockIdx.x} * kTile;
  StoreTile<kItems>(shared_keys, out + out_start, n);
  if constexpr (kValues) StoreTile<kItems>(shared_values, out_values + out_start, n);
}

// Temp: count keys, then count positions (when asked for), then one split per tile, each 256-byte
// aligned. A single tile needs no merge pass and so no temp at all.
struct TempLayout {
  std::size_t positions_offset = 0;
  std::size_t splits_offset = 0;
  std::size_t bytes = 0;
};

std::size_t RoundUp256(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

template <typename Key>
std::int64_t TileCount(std::size_t count) {
  return static_cast<std::int64_t>((count + TileItems<Key>() - 1) / TileItems<Key>());
}

template <typename Key>
TempLayout LayoutOf(const KeySortArgs& args) {
  TempLayout layout;
  const std::int64_t tiles = TileCount<Key>(args.count);
  if (tiles <= 1) return layout;
  layout.positions_offset = RoundUp256(args.count * sizeof(Key));
  layout.splits_offset = layout.positions_offset + (args.positions ? RoundUp256(args.count * 4) : 0);
  layout.bytes = layout.splits_offset + static_cast<std::size_t>(tiles) * sizeof(int);
  return layout;
}

// Global merge passes needed after the block sort: one per doubling of the run width below count.
template <typename Key>
int PassCount(std::size_t count) {
  int passes = 0;
  for (std::size_t width = TileItems<Key>(); width < count; width *= 2) ++passes;
  return passes;
}

template <typename Key, bool kValues>
Status Sort(const KeySortArgs& args, const TempLayout& layout, void* temp, cudaStream_t stream) {
  const auto count = static_cast<std::int64_t>(args.count);
  const std::int64_t tiles = TileCount<Key>(args.count);
  const int passes = PassCount<Key>(args.count);
  auto* temp_base = static_cast<char*>(temp);
  Key* keys[2] = {static_cast<Key*>(args.keys), reinterpret_cast<Key*>(temp_base)};
  std::uint32_t* values[2] = {args.positions,
                              kValues && passes > 0
                                  ? reinterpret_cast<std::uint32_t*>(temp_base + layout.positions_offset)
                                  : nullptr};
  // Buffer 0 is args.keys / args.positions, 1 is temp; every pass flips. The block sort writes to 0
  // when an even number of passes follows and to 1 when odd, so the last pass lands in 0, no copy.
  int current = passes % 2;
  BlockSortKernel<Key, kValues><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(
      keys[0], keys[current], values[current], count);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("merge sort block-sort kernel");

  int* splits = passes > 0 ? reinterpret_cast<int*>(temp_base + layout.splits_offset) : nullptr;
  const auto partition_blocks = static_cast<unsigned>((tiles + kThreads - 1) / kThreads);
  for (std::int64_t width = TileItems<Key>(); width < count; width *= 2) {
    PartitionKernel<Key><<<partition_blocks, kThreads, 0, stream>>>(keys[current], count, width, tiles, splits);
    GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("merge sort partition kernel");
    MergeKernel<Key, kValues><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(
        keys[current], values[current], keys[1 - current], values[1 - current], count, width, splits);
    GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("merge sort merge kernel");
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

template <typename Key>
Status SortOfWidth(const KeySortArgs& args, void* temp, std::size_t temp_bytes, cudaStream_t stream) {
  const TempLayout layout = LayoutOf<Key>(args);
  if (layout.bytes > 0 && (temp == nullptr || temp_bytes < layout.bytes)) {
    return Status(StatusCode::kInvalidArgument, "merge sort temporary storage is smaller than MergeSortTempBytes");
  }
  return args.positions ? Sort<Key, true>(args, layout, temp, stream) : Sort<Key, false>(args, layout, temp, stream);
}

}  // namespace

Status MergeSortTempBytes(const KeySortArgs& args, std::size_t* bytes) {
  *bytes = 0;
  GPUSORT_KERNELS_RETURN_IF_ERROR(CheckCount(args));
  *bytes = args.key_width == KeyWidth::k32 ? LayoutOf<std::uint32_t>(args).bytes : LayoutOf<std::uint64_t>(args).bytes;
  return Status::Ok();
}

Status MergeSort(const KeySortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(CheckCount(args));
  if (args.count == 0) return Status::Ok();
  if (args.keys == nullptr) return Status(StatusCode::kInvalidArgument, "merge sort without keys");
  return args.key_width == KeyWidth::k32
             ? SortOfWidth<std::uint32_t>(args, temp, temp_bytes, Native(stream))
             : SortOfWidth<std::uint64_t>(args, temp, temp_bytes, Native(stream));
}

}  // namespace gpusort::kernels
