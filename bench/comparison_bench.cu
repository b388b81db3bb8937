// The comparison sorts of kernels/ (comparison_sorts.h, issue 6) beside CUB, kernel time only.
//
// Cases (uint32_t keys; the names and n join with comparison_anchor.py's records):
//   u32_random            whole arrays of uniform random keys, 1K 64K 1M 16M 64M:
//                         gpusort_merge, gpusort_bitonic, gpusort_quicksort, cub_radix
//                         (cub::DeviceRadixSort::SortKeys), cub_merge (cub::DeviceMergeSort::SortKeys,
//                         less-than on uint32_t); and writeup_quicksort (quicksort_writeup.h, the
//                         write-up's one-thread-per-partition quicksort) at 1K, 64K and 1M (up to --writeup-max).
//   u32_sorted, u32_reversed, u32_all_equal, u32_organ_pipe, u32_few_distinct16
//                         quicksort's adversarial inputs at 1M and 16M: gpusort_quicksort, cub_radix.
//   odd_even_u32          1K, 2K and kOddEvenMaxKeys: gpusort_odd_even, gpusort_bitonic, cub_radix.
//   rows_u32              65536 rows x 256 and 16384 rows x 1024, every row sorted on its own:
//                         gpusort_bitonic_rows, cub_segmented (cub::DeviceSegmentedSort::SortKeys),
//                         cub_segmented_radix (cub::DeviceSegmentedRadixSort::SortKeys).
//   rows_u32_positions    the same with row-relative positions: gpusort_bitonic_rows writes them,
//                         cub_segmented is StableSortPairs and cub_segmented_radix SortPairs over
//                         row-relative indices (0..row_length-1 per row).
//   merge_positions_u32   16M with positions: gpusort_merge_positions, cub_merge
//                         (cub::DeviceMergeSort::SortPairs with uint32_t values 0..n-1).
//
// Timing, as kernel_bench.cu: CUDA events around the sort call and nothing else. Before every call,
// outside the events, the work buffer is restored by a device-to-device copy from one of 3 pristine
// inputs taken in turn (the CUB pair sorts that permute their values in place get theirs restored
// too), and the L2 is flushed by writing a buffer twice its size. All iterations of a case are queued
// before the host waits; methods interleave within an iteration. 3 warm-up calls, then 15 timed ones;
// median and min. writeup_quicksort is slow (the issue measured 3.26 s for 1M keys with device-side
// sync; our CUDA 12 rendition takes about 245 ms): 1 warm-up call and at most 3 timed ones from 64K
// keys, and from 16M one call and no warm-up.
//
// Correctness, once per case and outside timing: a reference sort of input 0 (CUB radix, segmented for
// rows) must be ascending (per row) and keep the input's sum and xor (per row); every method's keys
// must equal it. Where a method returns positions they must be a permutation (per row) with
// input[position] == key, and for gpusort (and CUB's stable sorts) those of a stable sort. Any failure
// prints FAIL and exits 1. No usable device: exit 2.
//
//   build/bin/comparison_bench [--json PATH] [--max-keys N] [--quick] [--runs N] [--warmup N]
//                              [--only SUBSTRING] [--no-writeup] [--writeup-max N]
//
// N takes a K, M or G suffix (binary). --quick leaves out 64M, the adversarial inputs at 16M and the
// write-up's quicksort at 1M. --only runs the cases whose name contains SUBSTRING. --writeup-max (1M
// by default) is the largest array the write-up's quicksort sorts: one untimed-warm-up-free call each
// from 16M, where a call takes seconds.
#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <cub/version.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench/cuda_bench_harness.cuh"
#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"

// The write-up's quicksort is a benchmark row only; without its header the row is left out.
#if __has_include("gpusort/kernels/quicksort_writeup.h")
#include "gpusort/kernels/quicksort_writeup.h"
#define GPUSORT_HAVE_WRITEUP_QUICKSORT 1
#else
#define GPUSORT_HAVE_WRITEUP_QUICKSORT 0
#endif

namespace {

namespace gk = gpusort::kernels;
using namespace gpusort::bench;  // the shared harness: Die, DeviceBuffer, EventPool, L2Flusher, ...

constexpr int kInputs = 3;  // pristine inputs the iterations rotate through
constexpr std::size_t kK = std::size_t{1} << 10;
constexpr std::size_t kM = std::size_t{1} << 20;

// ---------------------------------------------------------------------------------------------------
// Inputs, generated on the device: splitmix64 of (index + seed) for the random ones; the structured
// ones differ by input only in a small offset, so all three rotating inputs have the same shape.

enum class Distribution {
  kRandom,        // all 32 bits random
  kSorted,        // ascending, distinct, spread over the 32-bit range
  kReversed,      // descending, distinct
  kAllEqual,      // one value
  kOrganPipe,     // ascending to the middle, then descending
  kFewDistinct,   // 16 distinct values, random order
};

__host__ __device__ inline std::uint64_t SplitMix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__global__ void GenerateKernel(std::uint32_t* out, std::size_t n, Distribution d, int input) {
  const std::uint64_t base = SplitMix64(1000 + input);
  const std::uint64_t spread = (std::uint64_t{1} << 32) / (n + 1);  // sorted keys span the 32 bits
  const std::uint32_t stride = spread > 0 ? static_cast<std::uint32_t>(spread) : 1u;
  const std::uint32_t offset = static_cast<std::uint32_t>(input);
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const auto index = static_cast<std::uint32_t>(i);
    const auto last = static_cast<std::uint32_t>(n - 1);
    std::uint32_t key = 0;
    switch (d) {
      case Distribution::kRandom: key = static_cast<std::uint32_t>(SplitMix64(base + i) >> 32); break;
      case Distribution::kSorted: key = index * stride + offset; break;
      case Distribution::kReversed: key = (last - index) * stride + offset; break;
      case Distribution::kAllEqual: key = 0x9E3779B9u + offset; break;
      case Distribution::kOrganPipe: key = (index < last - index ? index : last - index) * stride + offset; break;
      case Distribution::kFewDistinct:
        key = static_cast<std::uint32_t>(SplitMix64(base + i) >> 60) * 0x11111111u;
        break;
    }
    out[i] = key;
  }
}

// Row-relative positions (whole arrays: one row), the CUB pair sorts' values.
__global__ void RowIotaKernel(std::uint32_t* out, std::size_t n, std::size_t row_length) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = static_cast<std::uint32_t>(i % row_length);
  }
}

// rows + 1 segment offsets: row r is [offsets[r], offsets[r + 1]).
__global__ void OffsetsKernel(int* out, std::size_t rows, std::size_t row_length) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i <= rows;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = static_cast<int>(i * row_length);
  }
}

unsigned GridFor(std::size_t n) {
  constexpr std::size_t kThreads = 256;
  return static_cast<unsigned>(std::clamp<std::size_t>((n + kThreads - 1) / kThreads, 1, 65535 * 16));
}

std::vector<std::uint32_t> CopyToHost(const void* device, std::size_t n, cudaStream_t stream) {
  std::vector<std::uint32_t> host(n);
  CUDA_CHECK(cudaMemcpyAsync(host.data(), device, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

struct LessU32 {
  __host__ __device__ bool operator()(std::uint32_t a, std::uint32_t b) const { return a < b; }
};

// ---------------------------------------------------------------------------------------------------
// Cases and results.

struct Case {
  std::string name;  // joins with comparison_anchor.py's records, together with n
  Distribution distribution;
  std::size_t rows;        // 1 for a whole array
  std::size_t row_length;  // n for a whole array
  bool segmented;          // rows sorted on their own (row methods)
  bool positions;          // the sorts return positions too
  std::vector<std::string> methods;
  std::size_t n() const { return rows * row_length; }
};

struct Options {
  std::string json_path;
  std::size_t max_keys = std::size_t{1} << 26;
  bool quick = false;
  bool writeup = true;
  std::size_t writeup_max = std::size_t{1} << 20;  // seconds per call beyond: --writeup-max 64M to see them
  int runs = 15;
  int warmup = 3;
  std::string only;
};

struct Record {
  std::string case_name, method;
  std::size_t n = 0, rows = 0, row_length = 0;
  bool positions = false;
  int warmup = 0, runs = 0;
  double median_ms = 0, min_ms = 0;
};

double GKeysPerSecond(std::size_t n, double ms) {
  return ms > 0 ? static_cast<double>(n) / (ms * 1e-3) / 1e9 : 0;
}


// ---------------------------------------------------------------------------------------------------
// One case: buffers, its methods, verification and timing.
//
// Buffers: 3 pristine inputs; keys_[0] is what every method sorts (restored before each call), keys_[1]
// CUB's output or ping-pong buffer. values_[0] is where gpusort writes positions and where CUB's in-place
// pair sorts find their values (restored from iota_); values_[1] is CUB's value output.

class CaseRunner {
 public:
  CaseRunner(const Case& c, const gk::Stream& stream, const Options& options, L2Flusher& flusher)
      : case_(c),
        n_(c.n()),
        stream_(stream),
        native_(static_cast<cudaStream_t>(stream.native())),
        options_(options),
        flusher_(flusher) {}

  // Device bytes of the buffers (temp storage is checked after they are allocated).
  std::size_t BufferBytes() const {
    const std::size_t key_buffers = kInputs + 2;
    const std::size_t value_buffers = case_.positions ? 3 : 0;
    return n_ * sizeof(std::uint32_t) * (key_buffers + value_buffers) + (case_.rows + 1) * sizeof(int);
  }

  // Allocates and queries temp storage; false (after printing SKIP) when the device lacks the memory.
  bool Prepare() {
    Allocate();
    DefineMethods();
    temp_bytes_ = std::max<std::size_t>(ReferenceSort(nullptr), 1);
    for (const Method& m : methods_) temp_bytes_ = std::max(temp_bytes_, m.temp_bytes());
    std::size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    constexpr std::size_t kMargin = std::size_t{256} << 20;  // device runtime, CUB, the driver
    if (temp_bytes_ + kMargin > free_bytes) {
      std::printf("SKIP %s n=%zu: temp storage needs %zu MiB, %zu MiB free\n", case_.name.c_str(), n_,
                  temp_bytes_ >> 20, free_bytes >> 20);
      return false;
    }
    temp_ = DeviceBuffer(temp_bytes_);
    return true;
  }

  std::vector<Record> Run() {
    GenerateInputs();
    Verify();
    return Time();
  }

 private:
  struct Output {
    const void* keys;       // n sorted keys
    const void* positions;  // n positions, or null
  };

  struct Method {
    std::string name;
    bool positions = false;      // returns positions
    bool stable = false;         // its positions must be those of a stable sort
    bool restore_values = false; // sorts values_[0] in place: restored from iota_ before every call
    int warmup = 0, runs = 0;
    std::function<std::size_t()> temp_bytes;
    std::function<Output()> enqueue;
  };

  void Allocate() {
    for (int r = 0; r < kInputs; ++r) pristine_.emplace_back(n_ * sizeof(std::uint32_t));
    for (DeviceBuffer& b : keys_) b = DeviceBuffer(n_ * sizeof(std::uint32_t));
    if (case_.positions) {
      iota_ = DeviceBuffer(n_ * sizeof(std::uint32_t));
      for (DeviceBuffer& b : values_) b = DeviceBuffer(n_ * sizeof(std::uint32_t));
    }
    offsets_ = DeviceBuffer((case_.rows + 1) * sizeof(int));
  }

  void GenerateInputs() {
    for (int r = 0; r < kInputs; ++r) {
      GenerateKernel<<<GridFor(n_), 256, 0, native_>>>(pristine_[r].as<std::uint32_t>(), n_,
                                                      case_.distribution, r);
      CUDA_CHECK(cudaGetLastError());
    }
    if (case_.positions) {
      RowIotaKernel<<<GridFor(n_), 256, 0, native_>>>(iota_.as<std::uint32_t>(), n_, case_.row_length);
      CUDA_CHECK(cudaGetLastError());
    }
    OffsetsKernel<<<GridFor(case_.rows + 1), 256, 0, native_>>>(offsets_.as<int>(), case_.rows,
                                                               case_.row_length);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaStreamSynchronize(native_));
  }

  // --- the methods ---------------------------------------------------------------------------------

  int Count() const { return static_cast<int>(n_); }
  int Rows() const { return static_cast<int>(case_.rows); }
  std::uint32_t* Keys(int b) const { return keys_[b].as<std::uint32_t>(); }
  std::uint32_t* Values(int b) const { return values_[b].as<std::uint32_t>(); }
  const int* Begin() const { return offsets_.as<int>(); }
  const int* End() const { return offsets_.as<int>() + 1; }

  gk::KeySortArgs WholeArgs() const {
    gk::KeySortArgs args;
    args.key_width = gk::KeyWidth::k32;
    args.count = n_;
    args.keys = keys_[0].get();
    args.positions = case_.positions ? Values(0) : nullptr;
    return args;
  }

  gk::KeyRowsArgs RowsArgs() const {
    gk::KeyRowsArgs args;
    args.key_width = gk::KeyWidth::k32;
    args.rows = case_.rows;
    args.row_length = case_.row_length;
    args.keys = keys_[0].get();
    args.positions = case_.positions ? Values(0) : nullptr;
    return args;
  }

  Output InPlace() const { return {keys_[0].get(), case_.positions ? values_[0].get() : nullptr}; }

  using WholeSort = gk::Status (*)(const gk::KeySortArgs&, void*, std::size_t, const gk::Stream&);
  using WholeTemp = gk::Status (*)(const gk::KeySortArgs&, std::size_t*);

  Method Gpusort(const std::string& name, WholeTemp temp_fn, WholeSort sort_fn) {
    Method m;
    m.name = name;
    m.positions = case_.positions;
    m.stable = true;  // comparison_sorts.h: with positions, every algorithm gives a stable sort's answer
    m.temp_bytes = [this, temp_fn] {
      std::size_t bytes = 0;
      KERNELS_CHECK(temp_fn(WholeArgs(), &bytes));
      return bytes;
    };
    m.enqueue = [this, sort_fn] {
      KERNELS_CHECK(sort_fn(WholeArgs(), temp_.get(), temp_bytes_, stream_));
      return InPlace();
    };
    return m;
  }

  // temp == nullptr: a size query. Returns where the result is.
  Output CubRadix(void* temp, std::size_t* bytes) const {
    if (case_.positions) Die("cub_radix is keys only here");
    cub::DoubleBuffer<std::uint32_t> keys(Keys(0), Keys(1));
    CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp, *bytes, keys, Count(), 0, 32, native_));
    return {keys.Current(), nullptr};
  }

  Output CubMerge(void* temp, std::size_t* bytes) const {
    if (case_.positions) {
      CUDA_CHECK(cub::DeviceMergeSort::SortPairs(temp, *bytes, Keys(0), Values(0), Count(), LessU32{}, native_));
      return {keys_[0].get(), values_[0].get()};
    }
    CUDA_CHECK(cub::DeviceMergeSort::SortKeys(temp, *bytes, Keys(0), Count(), LessU32{}, native_));
    return {keys_[0].get(), nullptr};
  }

  Output CubSegmented(void* temp, std::size_t* bytes) const {
    if (case_.positions) {
      CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(temp, *bytes, Keys(0), Keys(1),
                                                           iota_.as<std::uint32_t>(), Values(1), n_,
                                                           case_.rows, Begin(), End(), native_));
      return {keys_[1].get(), values_[1].get()};
    }
    CUDA_CHECK(cub::DeviceSegmentedSort::SortKeys(temp, *bytes, Keys(0), Keys(1), n_, case_.rows, Begin(),
                                                  End(), native_));
    return {keys_[1].get(), nullptr};
  }

  Output CubSegmentedRadix(void* temp, std::size_t* bytes) const {
    if (case_.positions) {
      CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairs(temp, *bytes, Keys(0), Keys(1),
                                                          iota_.as<std::uint32_t>(), Values(1), Count(),
                                                          Rows(), Begin(), End(), 0, 32, native_));
      return {keys_[1].get(), values_[1].get()};
    }
    CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortKeys(temp, *bytes, Keys(0), Keys(1), Count(), Rows(),
                                                       Begin(), End(), 0, 32, native_));
    return {keys_[1].get(), nullptr};
  }

  using CubCall = Output (CaseRunner::*)(void*, std::size_t*) const;

  Method Cub(const std::string& name, CubCall call, bool stable, bool restore_values) {
    Method m;
    m.name = name;
    m.positions = case_.positions;
    m.stable = stable;
    m.restore_values = restore_values;
    m.temp_bytes = [this, call] {
      std::size_t bytes = 0;
      (this->*call)(nullptr, &bytes);
      return bytes;
    };
    m.enqueue = [this, call] {
      std::size_t bytes = temp_bytes_;
      const Output out = (this->*call)(temp_.get(), &bytes);
      CUDA_CHECK(cudaGetLastError());
      return out;
    };
    return m;
  }

  void DefineMethods() {
    for (const std::string& name : case_.methods) {
      Method m;
      if (name == "gpusort_merge" || name == "gpusort_merge_positions") {
        m = Gpusort(name, gk::MergeSortTempBytes, gk::MergeSort);
      } else if (name == "gpusort_bitonic") {
        m = Gpusort(name, gk::BitonicSortTempBytes, gk::BitonicSort);
      } else if (name == "gpusort_odd_even") {
        m = Gpusort(name, gk::OddEvenSortTempBytes, gk::OddEvenSort);
      } else if (name == "gpusort_quicksort") {
        m = Gpusort(name, gk::QuicksortTempBytes, gk::Quicksort);
      } else if (name == "writeup_quicksort") {
#if GPUSORT_HAVE_WRITEUP_QUICKSORT
        m.name = name;
        m.temp_bytes = [] { return std::size_t{0}; };
        m.enqueue = [this] {
          KERNELS_CHECK(gk::WriteupQuicksort(Keys(0), n_, stream_));
          return InPlace();
        };
        // 245 ms for 1M keys: one warm-up call, and at most 3 timed ones from 64K keys; from 16M
        // (seconds per call) one call, untimed warm-up left out.
        m.warmup = n_ >= 16 * kM ? 0 : std::min(options_.warmup, 1);
        m.runs = n_ >= 16 * kM ? 1 : n_ >= 64 * kK ? std::min(options_.runs, 3) : options_.runs;
#else
        std::printf("NOTE writeup_quicksort left out: quicksort_writeup.h was not there at build time\n");
        continue;
#endif
      } else if (name == "gpusort_bitonic_rows") {
        m.name = name;
        m.positions = case_.positions;
        m.stable = true;
        m.temp_bytes = [this] {
          std::size_t bytes = 0;
          KERNELS_CHECK(gk::BitonicSortRowsTempBytes(RowsArgs(), &bytes));
          return bytes;
        };
        m.enqueue = [this] {
          KERNELS_CHECK(gk::BitonicSortRows(RowsArgs(), temp_.get(), temp_bytes_, stream_));
          return InPlace();
        };
      } else if (name == "cub_radix") {
        m = Cub(name, &CaseRunner::CubRadix, true, false);
      } else if (name == "cub_merge") {
        // DeviceMergeSort::SortPairs is not documented stable: only a permutation is required.
        m = Cub(name, &CaseRunner::CubMerge, false, case_.positions);
      } else if (name == "cub_segmented") {
        m = Cub(name, &CaseRunner::CubSegmented, true, false);
      } else if (name == "cub_segmented_radix") {
        m = Cub(name, &CaseRunner::CubSegmentedRadix, true, false);
      } else {
        Die("unknown method " + name);
      }
      if (m.runs == 0) {
        m.warmup = options_.warmup;
        m.runs = options_.runs;
      }
      methods_.push_back(std::move(m));
    }
  }

  // Restores keys_[0] (and, for in-place pair sorts, values_[0]) from pristine input r.
  void EnqueueReset(const Method& method, int r) const {
    CUDA_CHECK(cudaMemcpyAsync(keys_[0].get(), pristine_[r].get(), n_ * sizeof(std::uint32_t),
                               cudaMemcpyDeviceToDevice, native_));
    if (method.restore_values) {
      CUDA_CHECK(cudaMemcpyAsync(values_[0].get(), iota_.get(), n_ * sizeof(std::uint32_t),
                                 cudaMemcpyDeviceToDevice, native_));
    }
  }

  // --- verification --------------------------------------------------------------------------------

  // The reference: CUB radix (segmented for rows), keys only, of keys_[0]. temp == nullptr: size query.
  std::size_t ReferenceSort(void* temp) const {
    std::size_t bytes = temp ? temp_bytes_ : 0;
    if (case_.segmented) {
      CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortKeys(temp, bytes, Keys(0), Keys(1), Count(), Rows(),
                                                         Begin(), End(), 0, 32, native_));
    } else {
      CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp, bytes, Keys(0), Keys(1), Count(), 0, 32, native_));
    }
    return bytes;
  }

  [[noreturn]] void Fail(const std::string& what) const {
    std::printf("FAIL %s n=%zu (%zu x %zu): %s\n", case_.name.c_str(), n_, case_.rows, case_.row_length,
                what.c_str());
    std::fflush(stdout);
    std::exit(1);
  }

  void Verify() {
    const std::size_t length = case_.row_length;
    input0_ = CopyToHost(pristine_[0].get(), n_, native_);
    CUDA_CHECK(cudaMemcpyAsync(keys_[0].get(), pristine_[0].get(), n_ * sizeof(std::uint32_t),
                               cudaMemcpyDeviceToDevice, native_));
    ReferenceSort(temp_.get());
    CUDA_CHECK(cudaGetLastError());
    reference_ = CopyToHost(keys_[1].get(), n_, native_);
    for (std::size_t row = 0; row < case_.rows; ++row) {
      const std::size_t b = row * length, e = b + length;
      if (!std::is_sorted(reference_.begin() + b, reference_.begin() + e)) {
        Fail("the reference (CUB) is not ascending in row " + std::to_string(row));
      }
      std::uint64_t sum_in = 0, sum_out = 0;
      std::uint32_t xor_in = 0, xor_out = 0;
      for (std::size_t i = b; i < e; ++i) {
        sum_in += input0_[i], xor_in ^= input0_[i];
        sum_out += reference_[i], xor_out ^= reference_[i];
      }
      if (sum_in != sum_out || xor_in != xor_out) {
        Fail("the reference (CUB) is not a permutation of row " + std::to_string(row));
      }
    }
    for (const Method& method : methods_) {
      EnqueueReset(method, 0);
      if (method.positions && !method.restore_values) {
        // Poison what the sort must write, so a position left unwritten cannot pass for a right one
        // (gpusort writes values_[0]; CUB's segmented pair sorts read iota_ and write values_[1]).
        for (const DeviceBuffer& b : values_) {
          CUDA_CHECK(cudaMemsetAsync(b.get(), 0xFF, n_ * sizeof(std::uint32_t), native_));
        }
      }
      const Output out = method.enqueue();
      CUDA_CHECK(cudaGetLastError());
      const std::vector<std::uint32_t> keys = CopyToHost(out.keys, n_, native_);
      const auto mismatch = std::mismatch(keys.begin(), keys.end(), reference_.begin());
      if (mismatch.first != keys.end()) {
        const std::size_t at = mismatch.first - keys.begin();
        Fail(method.name + " keys differ from the reference at index " + std::to_string(at) + " (" +
             std::to_string(*mismatch.first) + " vs " + std::to_string(*mismatch.second) + ")");
      }
      if (method.positions) CheckPositions(method, keys, CopyToHost(out.positions, n_, native_));
    }
  }

  // Positions: a permutation of 0..row_length-1 per row, input[row start + position] == key, and for a
  // stable method increasing within every run of equal keys (together: exactly a stable sort's answer).
  void CheckPositions(const Method& method, const std::vector<std::uint32_t>& keys,
                      const std::vector<std::uint32_t>& positions) const {
    const std::size_t length = case_.row_length;
    std::vector<std::uint32_t> seen(length, 0);  // row + 1 where the position was seen in that row
    for (std::size_t row = 0; row < case_.rows; ++row) {
      const std::size_t b = row * length;
      const auto stamp = static_cast<std::uint32_t>(row + 1);
      for (std::size_t i = b; i < b + length; ++i) {
        const std::uint32_t p = positions[i];
        const std::string where = method.name + " position at index " + std::to_string(i);
        if (p >= length) Fail(where + " out of range: " + std::to_string(p));
        if (seen[p] == stamp) Fail(where + " repeats " + std::to_string(p));
        seen[p] = stamp;
        if (input0_[b + p] != keys[i]) Fail(where + " does not point at its key");
        if (method.stable && i > b && keys[i] == keys[i - 1] && p <= positions[i - 1]) {
          Fail(where + " breaks stability among equal keys");
        }
      }
    }
  }

  // --- timing --------------------------------------------------------------------------------------

  std::vector<Record> Time() {
    const std::size_t m = methods_.size();
    std::vector<int> iterations(m);
    std::vector<std::size_t> first_event(m);
    std::size_t events_needed = 0;
    int most = 0;
    for (std::size_t k = 0; k < m; ++k) {
      iterations[k] = methods_[k].warmup + methods_[k].runs;
      first_event[k] = events_needed;
      events_needed += 2 * static_cast<std::size_t>(iterations[k]);
      most = std::max(most, iterations[k]);
    }
    EventPool events(events_needed);
    auto start = [&](std::size_t k, int it) { return events[first_event[k] + 2 * it]; };
    auto stop = [&](std::size_t k, int it) { return events[first_event[k] + 2 * it + 1]; };
    // Methods interleave within an iteration, so clock and thermal drift touches all of them alike.
    for (int it = 0; it < most; ++it) {
      const int r = it % kInputs;
      for (std::size_t k = 0; k < m; ++k) {
        if (it >= iterations[k]) continue;
        EnqueueReset(methods_[k], r);
        flusher_.Enqueue(native_);
        CUDA_CHECK(cudaEventRecord(start(k, it), native_));
        methods_[k].enqueue();
        CUDA_CHECK(cudaEventRecord(stop(k, it), native_));
      }
    }
    CUDA_CHECK(cudaStreamSynchronize(native_));
    CUDA_CHECK(cudaGetLastError());

    std::vector<Record> records;
    for (std::size_t k = 0; k < m; ++k) {
      std::vector<double> ms;
      for (int it = methods_[k].warmup; it < iterations[k]; ++it) {
        float elapsed = 0;
        CUDA_CHECK(cudaEventElapsedTime(&elapsed, start(k, it), stop(k, it)));
        ms.push_back(elapsed);
      }
      Record record;
      record.case_name = case_.name;
      record.method = methods_[k].name;
      record.n = n_;
      record.rows = case_.rows;
      record.row_length = case_.row_length;
      record.positions = case_.positions;
      record.warmup = methods_[k].warmup;
      record.runs = methods_[k].runs;
      record.median_ms = Median(ms);
      record.min_ms = *std::min_element(ms.begin(), ms.end());
      records.push_back(record);
    }
    return records;
  }

  const Case& case_;
  const std::size_t n_;
  const gk::Stream& stream_;
  const cudaStream_t native_;
  const Options& options_;
  L2Flusher& flusher_;

  std::size_t temp_bytes_ = 0;
  std::vector<DeviceBuffer> pristine_;  // kInputs
  DeviceBuffer keys_[2], values_[2], iota_, offsets_, temp_;
  std::vector<std::uint32_t> input0_, reference_;
  std::vector<Method> methods_;
};

// ---------------------------------------------------------------------------------------------------
// The case list, the command line and the output.

std::vector<Case> AllCases(const Options& options) {
  std::vector<Case> cases;
  auto whole = [](std::string name, Distribution d, std::size_t n, std::vector<std::string> methods,
                  bool positions = false) {
    return Case{std::move(name), d, 1, n, false, positions, std::move(methods)};
  };
  // 1. Whole arrays of random keys; the write-up's quicksort up to --writeup-max (64K with --quick).
  const std::size_t writeup_max = options.quick ? 64 * kK : options.writeup_max;
  for (std::size_t n : {kK, 64 * kK, kM, 16 * kM, 64 * kM}) {
    if (options.quick && n > 16 * kM) continue;
    std::vector<std::string> methods = {"gpusort_merge", "gpusort_bitonic", "gpusort_quicksort", "cub_radix",
                                        "cub_merge"};
    if (options.writeup && n <= writeup_max) methods.push_back("writeup_quicksort");
    cases.push_back(whole("u32_random", Distribution::kRandom, n, methods));
  }
  // 2. Quicksort's adversarial inputs.
  const std::pair<const char*, Distribution> adversarial[] = {
      {"u32_sorted", Distribution::kSorted},       {"u32_reversed", Distribution::kReversed},
      {"u32_all_equal", Distribution::kAllEqual},  {"u32_organ_pipe", Distribution::kOrganPipe},
      {"u32_few_distinct16", Distribution::kFewDistinct}};
  for (std::size_t n : {kM, 16 * kM}) {
    if (options.quick && n > kM) continue;
    for (const auto& [name, d] : adversarial) {
      cases.push_back(whole(name, d, n, {"gpusort_quicksort", "cub_radix"}));
    }
  }
  // 3. Odd-even transposition sort up to its limit.
  std::vector<std::size_t> odd_even_sizes = {kK, 2 * kK};
  if (gk::kOddEvenMaxKeys > 2 * kK) odd_even_sizes.push_back(gk::kOddEvenMaxKeys);
  for (std::size_t n : odd_even_sizes) {
    if (n > gk::kOddEvenMaxKeys) continue;
    cases.push_back(whole("odd_even_u32", Distribution::kRandom, n,
                          {"gpusort_odd_even", "gpusort_bitonic", "cub_radix"}));
  }
  // 4. Many rows.
  for (bool positions : {false, true}) {
    for (const auto& [rows, length] : {std::pair<std::size_t, std::size_t>{65536, 256}, {16384, 1024}}) {
      cases.push_back(Case{positions ? "rows_u32_positions" : "rows_u32", Distribution::kRandom, rows, length,
                           true, positions, {"gpusort_bitonic_rows", "cub_segmented", "cub_segmented_radix"}});
    }
  }
  // 5. Merge sort with positions.
  cases.push_back(whole("merge_positions_u32", Distribution::kRandom, 16 * kM,
                        {"gpusort_merge_positions", "cub_merge"}, true));
  return cases;
}

bool Selected(const Case& c, const Options& options) {
  if (c.n() > options.max_keys) return false;
  return options.only.empty() || c.name.find(options.only) != std::string::npos;
}


Options ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(arg + " needs a value", 2);
      return argv[++i];
    };
    if (arg == "--json") options.json_path = value();
    else if (arg == "--max-keys") options.max_keys = ParseCount(value());
    else if (arg == "--quick") options.quick = true;
    else if (arg == "--no-writeup") options.writeup = false;
    else if (arg == "--writeup-max") options.writeup_max = ParseCount(value());
    else if (arg == "--only") options.only = value();
    else if (arg == "--runs") options.runs = std::max<int>(1, static_cast<int>(ParseCount(value())));
    else if (arg == "--warmup") options.warmup = static_cast<int>(ParseCount(value()));
    else if (arg == "--help" || arg == "-h") {
      std::printf("usage: comparison_bench [--json PATH] [--max-keys N[K|M|G]] [--quick] [--runs N] "
                  "[--warmup N] [--only SUBSTRING] [--no-writeup] [--writeup-max N]\n");
      std::exit(0);
    } else {
      Die("unknown argument " + arg + " (see --help)", 2);
    }
  }
  return options;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

struct DeviceInfo {
  gk::DeviceProperties props;
  int runtime_version = 0, driver_version = 0;
  std::size_t l2_flush_bytes = 0;
};

void WriteJson(const std::string& path, const DeviceInfo& device, const Options& options,
               const std::vector<Record>& records) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) Die("cannot write " + path);
  std::fprintf(f, "{\n  \"device\": %s,\n", JsonString(device.props.name).c_str());
  std::fprintf(f, "  \"compute_capability\": \"%d.%d\",\n", device.props.compute_major,
               device.props.compute_minor);
  std::fprintf(f, "  \"cuda_runtime\": %d,\n  \"cuda_driver\": %d,\n  \"cub_version\": %d,\n",
               device.runtime_version, device.driver_version, CUB_VERSION);
  std::fprintf(f, "  \"runs\": %d,\n  \"warmup\": %d,\n  \"rotating_inputs\": %d,\n", options.runs,
               options.warmup, kInputs);
  std::fprintf(f, "  \"odd_even_max_keys\": %zu,\n  \"bitonic_rows_max_length\": %zu,\n",
               gk::kOddEvenMaxKeys, gk::kBitonicRowsMaxLength);
  std::fprintf(f, "  \"writeup_quicksort_built\": %s,\n", GPUSORT_HAVE_WRITEUP_QUICKSORT ? "true" : "false");
  std::fprintf(f, "  \"l2_flush_bytes\": %zu,\n  \"records\": [\n", device.l2_flush_bytes);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    std::fprintf(f,
                 "    {\"case\": %s, \"n\": %zu, \"rows\": %zu, \"row_length\": %zu, \"positions\": %s, "
                 "\"method\": %s, \"median_ms\": %.6f, \"min_ms\": %.6f, \"gkeys_per_s\": %.4f, "
                 "\"warmup\": %d, \"runs\": %d}%s\n",
                 JsonString(r.case_name).c_str(), r.n, r.rows, r.row_length, r.positions ? "true" : "false",
                 JsonString(r.method).c_str(), r.median_ms, r.min_ms, GKeysPerSecond(r.n, r.median_ms),
                 r.warmup, r.runs, i + 1 < records.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  if (std::fclose(f) != 0) Die("error writing " + path);
}

void PrintHeader() {
  std::printf("%-20s %10s %13s %-24s %11s %11s %9s %12s\n", "case", "n", "rows x len", "method", "median_ms",
              "min_ms", "Gkeys/s", "x first CUB");
}

// One line per method; the ratio is to the case's first CUB method (< 1: faster than CUB).
void PrintCase(const std::vector<Record>& records) {
  double cub_ms = 0;
  for (const Record& r : records) {
    if (r.method.rfind("cub_", 0) == 0) {
      cub_ms = r.median_ms;
      break;
    }
  }
  for (const Record& r : records) {
    const std::string shape = std::to_string(r.rows) + "x" + std::to_string(r.row_length);
    std::printf("%-20s %10zu %13s %-24s %11.4f %11.4f %9.3f %12.3f\n", r.case_name.c_str(), r.n,
                shape.c_str(), r.method.c_str(), r.median_ms, r.min_ms, GKeysPerSecond(r.n, r.median_ms),
                cub_ms > 0 ? r.median_ms / cub_ms : 0.0);
  }
  std::fflush(stdout);
}

void RunCase(const Case& c, const gk::Stream& stream, const Options& options, L2Flusher& flusher,
             std::vector<Record>* records) {
  CaseRunner runner(c, stream, options, flusher);
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t need = runner.BufferBytes();
  constexpr std::size_t kMargin = std::size_t{256} << 20;
  if (need + kMargin > free_bytes) {
    std::printf("SKIP %s n=%zu: needs %zu MiB, %zu MiB free\n", c.name.c_str(), c.n(), need >> 20,
                free_bytes >> 20);
    return;
  }
  if (!runner.Prepare()) return;
  const std::vector<Record> mine = runner.Run();
  PrintCase(mine);
  records->insert(records->end(), mine.begin(), mine.end());
}

DeviceInfo OpenDevice() {
  std::string why_none;
  if (gk::CountDevices(&why_none) == 0) Die("no usable CUDA device: " + why_none, 2);
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0) {
    Die(std::string("no usable CUDA device: ") + (error != cudaSuccess ? cudaGetErrorString(error) : "none"),
        2);
  }
  KERNELS_CHECK(gk::UseDevice(0));
  CUDA_CHECK(cudaSetDevice(0));
  DeviceInfo info;
  KERNELS_CHECK(gk::GetDeviceProperties(0, &info.props));
  CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
  CUDA_CHECK(cudaDriverGetVersion(&info.driver_version));
  return info;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = ParseOptions(argc, argv);
  DeviceInfo device = OpenDevice();
  gk::Stream stream;
  KERNELS_CHECK(gk::Stream::Create(&stream));
  L2Flusher flusher;
  device.l2_flush_bytes = flusher.bytes();
  std::printf("device: %s (sm_%d%d, %d SMs, %zu MiB), CUDA runtime %d, driver %d, CUB %d\n",
              device.props.name.c_str(), device.props.compute_major, device.props.compute_minor,
              device.props.multiprocessors, device.props.total_memory >> 20, device.runtime_version,
              device.driver_version, CUB_VERSION);
  std::printf("median of %d runs after %d warm-up (writeup_quicksort: 1 warm-up, at most 3 runs from 64K), "
              "%d rotating inputs, L2 flushed (%zu MiB) before each\n",
              options.runs, options.warmup, kInputs, device.l2_flush_bytes >> 20);
  PrintHeader();

  std::vector<Record> records;
  for (const Case& c : AllCases(options)) {
    if (Selected(c, options)) RunCase(c, stream, options, flusher, &records);
  }
  if (!options.json_path.empty()) {
    WriteJson(options.json_path, device, options, records);
    std::printf("wrote %s (%zu records)\n", options.json_path.c_str(), records.size());
  }
  return 0;
}
