// RADIX_SELECT top-k (kernels/top_k.h): the host side. Kernels are in top_k_radix_select.cuh.
//
// Why a sampled threshold first. A plain MSD radix select reads the whole row once per digit, and real
// float keys make the first digits poor: torch.rand's [0, 1) puts half the keys in one exponent, so an
// 8- or 11-bit top digit leaves a quarter to a half of the row as candidates and the next pass must
// read the row again (AIR Top-K re-reads it for that reason: 2 reads or more). Reading 1 GiB costs
// ~0.36 ms on the H100, so a 0.6 ms target for 256M keys allows one read. Long rows therefore:
//   1. sample 16384 keys at evenly spaced positions (one block, ~64 KiB of 1 GiB) and take as T the
//      sample of rank r, r chosen so that about k + 4 sigma + 8 samples lie below it: P(fewer than k
//      keys <= T) is negligible for random order, and for sorted orders the evenly spaced samples are
//      exact quantiles;
//   2. ONE read of the row appends every key <= T (about r * n / 16384 of them) with its position to a
//      candidate buffer (warp-staged appends, one atomic per 128) and counts them; of the keys equal
//      to T each warp appends only its earliest k, which is all the tie rule can take, so a k-th key
//      with millions of equals (16-bit keys, few distinct values) still leaves few candidates;
//   3. refinement passes (top_k_radix_select.cuh) run over the small candidate buffer instead of the row,
//      then a gather of the k and, if sorted, a sort of the k.
// The sample can only misjudge the count, never the answer: when fewer than k keys are <= T, or more
// than fit the buffer (all-equal rows, a k-th key with millions of equals), the same passes run over
// the row itself (slower, exact). Rows shorter than 2^18 keys, or with k so large that the candidates
// would not be few, skip the sample and refine over the row directly. Nothing waits for the host: the
// launch sequence is fixed (passes with nothing left to do return at once) and every decision is read
// by the kernels from the row's state in temp.
//
// Rows: batches of rows go through the same sequence, one grid row (blockIdx.y) per row; rows of at
// most 4096 keys take one block each and keep their histograms in shared memory.
//
// Measured on the H100 (ncu, kernels serialized; 256M [0, 1) floats largest-first, k = 100): sample
// 18 us, filter 358 us (a read-only kernel over the same GiB: 354 us), passes 16 + 7 + 10 us and three
// with nothing to do at 3.3 us, gather 5 us, block sort 7 us; with k = 100000 the CUB sort of the k
// (60-bit keys, 8 onesweep passes) adds ~88 us. Tried and dropped, both slower: spreading the sample's
// loads over 16 blocks with __match_any_sync-aggregated digit counts (22 us), and visiting candidates
// with ~4096 per block instead of the whole grid (one dependent load per lane per step: passes
// 16 + 13 + 16 us, gather 12 us). On the H200 (2026-11-29) the filter took 325 us at 69% of the read
// bandwidth; with the next step's loads in flight during the visit and whole steps' masks as constants
// (ForEachRowStep), 270 us at 83%, and the whole call 0.361 -> 0.321 ms (docs/benchmarks-log.md).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

#include "cuda_status.h"
#include "gpusort/kernels/top_k.h"
#include "top_k_radix_select.cuh"

namespace gpusort::kernels {
namespace {

using radix_select::Job;
using radix_select::kBins;
using radix_select::kBlockSortMax;
using radix_select::kSamples;
using radix_select::kThreads;
using radix_select::RowState;

constexpr std::size_t kFastFrom = std::size_t{1} << 18;        // rows this long sample a threshold first
constexpr std::size_t kOneBlockUpTo = 4096;                    // rows this short take one block each
constexpr std::size_t kKeysPerBlock = 4096;                    // at least this much row per block
constexpr std::size_t kBatchResults = std::size_t{1} << 20;    // results a batch holds in temp
constexpr std::size_t kBatchCandidates = std::size_t{1} << 23; // candidates a batch holds in temp
constexpr std::size_t kMaxBatchRows = 65535;                   // gridDim.y
constexpr std::size_t kMaxBatchRowsMultiBlock = 1024;          // rows with global histograms (8 KiB each)
constexpr std::size_t kMaxRowBlocks = 1024;                    // blocks a row (bounds the filter's warps)

std::size_t RoundUp256(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

int BitWidth(std::uint64_t x) {
  int bits = 0;
  while (x != 0) {
    ++bits;
    x >>= 1;
  }
  return bits;
}

// Everything the launch sequence and the temp layout need; a function of the arguments alone.
struct Plan {
  std::size_t rows = 0, n = 0, k = 0;
  int passes = 0;               // refinement passes launched (0 when k == n: everything is taken)
  int pos_bits = 0;             // bits of a position within the row (at least 1)
  bool fast = false;            // sample + filter
  std::uint32_t sample_rank = 0;
  std::uint32_t capacity = 0;   // candidates per row
  std::uint32_t tie_cap = 0xFFFFFFFFu;  // keys equal to T a filter warp appends; all when it is this
  std::size_t batch_rows = 0;
  bool block_sort = false, large_sort = false;
  // Temp layout (byte offsets), per batch.
  std::size_t states = 0, hists = 0, cand_keys = 0, cand_pos = 0, work_keys = 0, work_pos = 0;
  std::size_t sort_a = 0, sort_b = 0, sort_c = 0, sort_d = 0, offsets = 0, cub = 0, cub_bytes = 0, bytes = 0;
};

// What turns the row's keys into ordered bits as they are read: nothing for ordered bits, else the key
// order of key_order.h written as two xors (see KeyDecode).
template <typename Key>
radix_select::KeyDecode<Key> DecodeOf(const TopKArgs& a) {
  radix_select::KeyDecode<Key> d;
  if (!a.raw_keys) return d;
  constexpr Key kSign = Key{1} << (sizeof(Key) * 8 - 1);
  if (a.raw_kind != KeyKind::kUnsigned) d.flip = kSign;
  if (a.raw_kind == KeyKind::kFloat) d.negative = static_cast<Key>(~kSign);
  if (a.raw_complement) d.flip = static_cast<Key>(~d.flip);
  return d;
}

Status CheckArgs(const TopKArgs& a) {
  if (a.key_width != KeyWidth::k16 && a.key_width != KeyWidth::k32 && a.key_width != KeyWidth::k64) {
    return Status(StatusCode::kInvalidArgument, "radix select top-k: unknown key width");
  }
  if (a.k < 1 || a.k > a.row_length) {
    return Status(StatusCode::kInvalidArgument, "radix select top-k: k must be between 1 and the row length");
  }
  if (a.rows != 0 && a.row_length > static_cast<std::size_t>(INT_MAX) / a.rows) {
    return Status(StatusCode::kInvalidArgument, "radix select top-k: rows * row_length above 2^31-1");
  }
  return Status::Ok();
}

// The large-k sort of each row's results by (key, position), through CUB. 32-bit keys: one sort of
// (key << pos_bits | position), all distinct. 64-bit keys: by position, then stably by key. temp ==
// nullptr: only sets *cub_bytes.
template <typename Key>
cudaError_t CubSort(void* temp, std::size_t* cub_bytes, void* a, void* b, void* c, void* d, std::size_t items,
                    bool segmented, std::size_t segments, const int* offsets, int pos_bits, cudaStream_t stream) {
  const int count = static_cast<int>(items), rows = static_cast<int>(segments);
  if constexpr (sizeof(Key) <= 4) {
    cub::DoubleBuffer<std::uint64_t> keys(static_cast<std::uint64_t*>(a), static_cast<std::uint64_t*>(b));
    const cudaError_t e =
        !segmented
            ? cub::DeviceRadixSort::SortKeys(temp, *cub_bytes, keys, count, 0, static_cast<int>(sizeof(Key) * 8) + pos_bits, stream)
            : cub::DeviceSegmentedRadixSort::SortKeys(temp, *cub_bytes, keys, count, rows, offsets, offsets + 1, 0,
                                                      static_cast<int>(sizeof(Key) * 8) + pos_bits, stream);
    if (temp != nullptr && keys.selector != 0 && e == cudaSuccess) {
      return cudaMemcpyAsync(a, b, items * 8, cudaMemcpyDeviceToDevice, stream);
    }
    return e;
  } else {
    cub::DoubleBuffer<std::uint64_t> keys(static_cast<std::uint64_t*>(a), static_cast<std::uint64_t*>(b));
    cub::DoubleBuffer<std::uint32_t> pos(static_cast<std::uint32_t*>(c), static_cast<std::uint32_t*>(d));
    std::size_t first = *cub_bytes, second = *cub_bytes;
    cudaError_t e = !segmented
                        ? cub::DeviceRadixSort::SortPairs(temp, first, pos, keys, count, 0, pos_bits, stream)
                        : cub::DeviceSegmentedRadixSort::SortPairs(temp, first, pos, keys, count, rows, offsets,
                                                                   offsets + 1, 0, pos_bits, stream);
    if (e != cudaSuccess) return e;
    e = !segmented ? cub::DeviceRadixSort::SortPairs(temp, second, keys, pos, count, 0, 64, stream)
                      : cub::DeviceSegmentedRadixSort::SortPairs(temp, second, keys, pos, count, rows, offsets,
                                                                 offsets + 1, 0, 64, stream);
    if (temp == nullptr) *cub_bytes = std::max(first, second);
    if (e != cudaSuccess || temp == nullptr) return e;
    if (keys.selector != 0) e = cudaMemcpyAsync(a, b, items * 8, cudaMemcpyDeviceToDevice, stream);
    if (e == cudaSuccess && pos.selector != 0) e = cudaMemcpyAsync(c, d, items * 4, cudaMemcpyDeviceToDevice, stream);
    return e;
  }
}

template <typename Key>
Status MakePlan(const TopKArgs& args, Plan* p) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(CheckArgs(args));
  p->rows = args.rows;
  p->n = args.row_length;
  p->k = args.k;
  const std::size_t n = p->n, k = p->k;
  p->pos_bits = std::max(1, BitWidth(n - 1));
  const int key_passes = (static_cast<int>(sizeof(Key)) * 8 + radix_select::kDigitBits - 1) / radix_select::kDigitBits;
  const int pos_passes = (BitWidth(n - 1) + radix_select::kDigitBits - 1) / radix_select::kDigitBits;
  p->passes = k == n ? 0 : key_passes + pos_passes;
  if (n >= kFastFrom && k < n) {
    // x samples are expected below the k-th key; T is the sample of rank r, about 4 sigma above x, and
    // the buffer holds about 6 sigma more than the r * n / kSamples keys expected at or below T.
    const double per_sample = static_cast<double>(n) / kSamples;
    const double x = static_cast<double>(k) / per_sample;
    const double r = std::ceil(x + 4 * std::sqrt(x)) + 8;
    const double capacity = std::ceil((r + 6 * std::sqrt(r) + 16) * per_sample);
    // Room for each filter warp's earliest k equals of T (FilterKernel says why), so that a k-th key with
    // many equals still leaves few candidates; without that room when it would not pay.
    const double warps = static_cast<double>(std::min((n + kKeysPerBlock - 1) / kKeysPerBlock, kMaxRowBlocks) *
                                             radix_select::kWarps);
    const double with_ties = capacity + warps * static_cast<double>(k);
    // Worth it while the candidates (key + position) take at most half the bytes of the row.
    auto worth_it = [&](double c) { return c * (sizeof(Key) + 4) <= 0.5 * static_cast<double>(n * sizeof(Key)); };
    if (r <= kSamples && worth_it(capacity)) {
      p->fast = true;
      p->sample_rank = static_cast<std::uint32_t>(r);
      p->capacity = static_cast<std::uint32_t>(capacity);
      if (worth_it(with_ties)) {
        p->capacity = static_cast<std::uint32_t>(with_ties);
        p->tie_cap = static_cast<std::uint32_t>(k);
      }
    }
  }
  std::size_t batch = std::min<std::size_t>(std::max<std::size_t>(p->rows, 1),
                                            n > kOneBlockUpTo ? kMaxBatchRowsMultiBlock : kMaxBatchRows);
  batch = std::min(batch, std::max<std::size_t>(1, kBatchResults / k));
  if (p->fast) batch = std::min(batch, std::max<std::size_t>(1, kBatchCandidates / p->capacity));
  p->batch_rows = batch;
  p->block_sort = args.sorted && k > 1 && k <= kBlockSortMax;
  p->large_sort = args.sorted && k > kBlockSortMax;

  std::size_t at = 0;
  auto carve = [&](std::size_t bytes) {
    const std::size_t offset = at;
    at += RoundUp256(bytes);
    return offset;
  };
  p->states = carve(batch * sizeof(RowState));
  p->hists = carve(n > kOneBlockUpTo ? batch * kBins * 4 : 0);
  p->cand_keys = carve(p->fast ? batch * p->capacity * sizeof(Key) : 0);
  p->cand_pos = carve(p->fast ? batch * p->capacity * 4 : 0);
  p->work_keys = carve(batch * k * sizeof(Key));
  p->work_pos = carve(batch * k * 8);
  if (p->large_sort) {
    const std::size_t items = batch * k;
    p->sort_a = carve(items * 8);
    p->sort_b = carve(items * 8);
    p->sort_c = carve(sizeof(Key) == 8 ? items * 4 : 0);
    p->sort_d = carve(sizeof(Key) == 8 ? items * 4 : 0);
    p->offsets = carve((batch + 1) * 4);
    GPUSORT_KERNELS_RETURN_IF_ERROR(FromCuda(CubSort<Key>(nullptr, &p->cub_bytes, nullptr, nullptr, nullptr, nullptr,
                                                          items, batch > 1, batch, nullptr, p->pos_bits,
                                                          nullptr),
                                             "radix select top-k: CUB sort size"));
    p->cub = carve(p->cub_bytes);
  }
  p->bytes = at;
  return Status::Ok();
}

// Launches in stream order, or (after_previous_grid) with programmatic dependent launch, as merge_sort.cu.
template <typename... Params, typename... Args>
cudaError_t Launch(void (*kernel)(Params...), dim3 grid, unsigned block, bool after_previous_grid,
                   cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = dim3(block);
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = after_previous_grid ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
}

template <typename Key>
__global__ void PackKernel(const Key* keys, const std::int64_t* pos, std::size_t items, int pos_bits,
                           std::uint64_t* a, std::uint32_t* c) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < items;
       i += std::size_t{gridDim.x} * blockDim.x) {
    if constexpr (sizeof(Key) <= 4) {
      a[i] = static_cast<std::uint64_t>(keys[i]) << pos_bits | static_cast<std::uint64_t>(pos[i]);
    } else {
      a[i] = keys[i];
      c[i] = static_cast<std::uint32_t>(pos[i]);
    }
  }
}

template <typename Key>
__global__ void UnpackKernel(const std::uint64_t* a, const std::uint32_t* c, std::size_t items, int pos_bits,
                             Key* keys, std::int64_t* pos) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < items;
       i += std::size_t{gridDim.x} * blockDim.x) {
    if constexpr (sizeof(Key) <= 4) {
      keys[i] = static_cast<Key>(a[i] >> pos_bits);
      pos[i] = static_cast<std::int64_t>(a[i] & ((std::uint64_t{1} << pos_bits) - 1));
    } else {
      keys[i] = a[i];
      pos[i] = c[i];
    }
  }
}

__global__ void SegmentOffsetsKernel(int* offsets, std::size_t segments, std::size_t k) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i <= segments;
       i += std::size_t{gridDim.x} * blockDim.x) {
    offsets[i] = static_cast<int>(i * k);
  }
}

template <typename Key>
Status SortLarge(const Plan& p, char* temp, Key* keys, std::int64_t* pos, std::size_t rows, cudaStream_t s) {
  const std::size_t items = rows * p.k;
  auto* a = reinterpret_cast<std::uint64_t*>(temp + p.sort_a);
  auto* c = reinterpret_cast<std::uint32_t*>(temp + p.sort_c);
  auto* offsets = reinterpret_cast<int*>(temp + p.offsets);
  const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((items + 255) / 256, 4096));
  PackKernel<Key><<<grid, 256, 0, s>>>(keys, pos, items, p.pos_bits, a, c);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("radix select top-k: pack kernel");
  if (p.batch_rows > 1) {  // segmented whenever the plan is (its CUB temp was sized so)
    SegmentOffsetsKernel<<<static_cast<unsigned>((rows + 256) / 256), 256, 0, s>>>(offsets, rows, p.k);
    GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("radix select top-k: offsets kernel");
  }
  std::size_t cub_bytes = p.cub_bytes;
  GPUSORT_KERNELS_RETURN_IF_ERROR(FromCuda(CubSort<Key>(temp + p.cub, &cub_bytes, a, temp + p.sort_b, c, temp + p.sort_d,
                                                        items, p.batch_rows > 1, rows, offsets, p.pos_bits, s),
                                           "radix select top-k: CUB sort"));
  UnpackKernel<Key><<<grid, 256, 0, s>>>(a, c, items, p.pos_bits, keys, pos);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("radix select top-k: unpack kernel");
  return Status::Ok();
}

template <typename Key>
Status Select(const TopKArgs& args, void* temp, std::size_t temp_bytes, cudaStream_t s) {
  Plan p;
  GPUSORT_KERNELS_RETURN_IF_ERROR(MakePlan<Key>(args, &p));
  if (p.rows == 0 || (args.out_keys == nullptr && args.out_positions == nullptr)) return Status::Ok();
  if (args.keys == nullptr) return Status(StatusCode::kInvalidArgument, "radix select top-k without keys");
  if (temp_bytes < p.bytes || temp == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "radix select top-k: temporary storage is smaller than RadixSelectTopKTempBytes");
  }
  // Blocks a row: the whole GPU for one long row, shared out over a batch of them.
  int device = 0, sms = 0, per_sm = 0;
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  GPUSORT_CUDA_RETURN_IF_ERROR(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, radix_select::FilterKernel<Key>, kThreads, 0));
  const std::size_t target_blocks =
      std::min(static_cast<std::size_t>(sms) * std::max(per_sm, 1), kMaxRowBlocks);  // the plan's tie room
  char* t = static_cast<char*>(temp);
  const std::size_t n = p.n, k = p.k;
  for (std::size_t row0 = 0; row0 < p.rows; row0 += p.batch_rows) {
    const std::size_t b = std::min(p.batch_rows, p.rows - row0);
    Job<Key> job;
    job.keys = static_cast<const Key*>(args.keys) + row0 * n;
    job.row_length = static_cast<std::uint32_t>(n);
    job.k = static_cast<std::uint32_t>(k);
    job.states = reinterpret_cast<RowState*>(t + p.states);
    job.hists = n > kOneBlockUpTo ? reinterpret_cast<std::uint32_t*>(t + p.hists) : nullptr;
    job.cand_keys = reinterpret_cast<Key*>(t + p.cand_keys);
    job.cand_pos = reinterpret_cast<std::uint32_t*>(t + p.cand_pos);
    job.capacity = p.capacity;
    job.sample_rank = p.sample_rank;
    job.tie_cap = p.tie_cap;
    job.out_keys = args.out_keys ? static_cast<Key*>(args.out_keys) + row0 * k : reinterpret_cast<Key*>(t + p.work_keys);
    job.out_pos = args.out_positions ? args.out_positions + row0 * k : reinterpret_cast<std::int64_t*>(t + p.work_pos);
    job.decode = DecodeOf<Key>(args);
    const std::size_t per_row =
        n <= kOneBlockUpTo ? 1
                           : std::min((n + kKeysPerBlock - 1) / kKeysPerBlock, std::max<std::size_t>(1, target_blocks / b));
    const dim3 row_grid(static_cast<unsigned>(per_row), static_cast<unsigned>(b));
    const dim3 one_block_a_row(static_cast<unsigned>(b));
    if (p.fast) {
      GPUSORT_CUDA_RETURN_IF_ERROR(
          Launch(radix_select::SampleKernel<Key>, one_block_a_row, radix_select::kSampleThreads, false, s, job));
      GPUSORT_CUDA_RETURN_IF_ERROR(Launch(radix_select::FilterKernel<Key>, row_grid, kThreads, true, s, job));
    } else {
      GPUSORT_CUDA_RETURN_IF_ERROR(Launch(radix_select::InitKernel<Key>, one_block_a_row, kThreads, false, s, job));
    }
    for (int pass = 0; pass < p.passes; ++pass) {
      GPUSORT_CUDA_RETURN_IF_ERROR(Launch(radix_select::PassKernel<Key>, row_grid, kThreads, true, s, job));
    }
    GPUSORT_CUDA_RETURN_IF_ERROR(Launch(radix_select::GatherKernel<Key>, row_grid, kThreads, true, s, job));
    if (p.block_sort) {
      std::uint32_t padded = 2;
      while (padded < k) padded *= 2;
      GPUSORT_CUDA_RETURN_IF_ERROR(Launch(radix_select::BlockSortKernel<Key>, one_block_a_row,
                                          std::min<std::uint32_t>(1024, padded / 2), true, s, job.out_keys,
                                          job.out_pos, job.k, padded));
    } else if (p.large_sort) {
      GPUSORT_KERNELS_RETURN_IF_ERROR(SortLarge<Key>(p, t, job.out_keys, job.out_pos, b, s));
    }
  }
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("radix select top-k");
  return Status::Ok();
}

}  // namespace

Status RadixSelectTopKTempBytes(const TopKArgs& args, std::size_t* bytes) {
  *bytes = 0;
  Plan p;
  switch (args.key_width) {
    case KeyWidth::k16: GPUSORT_KERNELS_RETURN_IF_ERROR(MakePlan<std::uint16_t>(args, &p)); break;
    case KeyWidth::k32: GPUSORT_KERNELS_RETURN_IF_ERROR(MakePlan<std::uint32_t>(args, &p)); break;
    default: GPUSORT_KERNELS_RETURN_IF_ERROR(MakePlan<std::uint64_t>(args, &p)); break;
  }
  *bytes = p.rows == 0 ? 0 : p.bytes;
  return Status::Ok();
}

Status RadixSelectTopK(const TopKArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream) {
  switch (args.key_width) {
    case KeyWidth::k16: return Select<std::uint16_t>(args, temp, temp_bytes, Native(stream));
    case KeyWidth::k32: return Select<std::uint32_t>(args, temp, temp_bytes, Native(stream));
    default: return Select<std::uint64_t>(args, temp, temp_bytes, Native(stream));
  }
}

}  // namespace gpusort::kernels
