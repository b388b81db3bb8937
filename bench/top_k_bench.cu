// The top-k kernels of kernels/ (top_k.h, issue 7) beside a full sort and a plain copy, kernel time only.
//
// Keys: float32 uniform in [0, 1) on a 2^-24 grid (as torch.rand draws them, so a 256M array holds each
// value about 16 times and the tie rule matters), turned into ordered bits (as server/core/key_order.h
// does) and complemented (largest = true) on the device, once per input, before anything is timed. The
// kernels get those bits and select the k smallest, sorted = true: the k largest floats, larger first,
// ties to the earlier position. Cases (the names join with top_k_anchor.py's records):
//   f32_256M_k10, f32_256M_k100, f32_256M_k1000, f32_256M_k100000    one vector of 2^28 keys
//   f32_16M_k100                                                     one vector of 2^24 keys
//   f32_rows_1024x4096_k10, f32_rows_4096x1024_k32, f32_rows_65536x256_k10   rows, each on its own
//   f16_rows_128x131072_k50, f16_rows_1024x32000_k50: the same rows in float16 (the 16-bit methods)
//   bf16_256M_k100, bf16_rows_128x131072_k50, bf16_rows_1024x32000_k50       bfloat16 keys (issue 16's
//       shapes): uniform in [0, 1) on the bfloat16 grid, given to the kernels as the server gives them,
//       their 16-bit ordered bits complemented and zero-extended to 32 bits (server/backend/cuda/
//       device_key_bits.h); the server's widening of the raw keys is timed as its own method:
//   widen_bf16_keys        kernels::WidenToOrderedBitsAsync from the raw bfloat16 keys (bf16 cases only;
//                          its output is checked once against the inputs the kernels get)
//   gpusort_small_k_16bit  SmallTopK on the keys' own 16-bit ordered bits (KeyWidth::k16, bf16 cases only):
//                          2 bytes a key read; its answer, zero-extended, is checked against the others'
//   gpusort_radix_select_16bit    RadixSelectTopK on the same 16-bit ordered bits (bf16 cases only)
//   gpusort_radix_select_raw_bf16 RadixSelectTopK reading the raw bfloat16 keys and ordering them as it
//                          reads (TopKArgs::raw_keys): a TopK on a caller's device region (bf16 cases only)
//   to_ordered_bf16_16bit  kernels::ToOrderedBitsAsync(k16) in place: what keys already on the device in
//                          bfloat16 would pay to become those bits (bf16 cases only)
// Methods, each where it applies:
//   gpusort_radix_select   RadixSelectTopK, every case
//   gpusort_small_k        SmallTopK, k <= kSmallTopKMaxK
//   gpusort_thread_lists   ThreadListsTopK (the write-up's method, repaired), k <= kThreadListsMaxK
//   cub_full_sort          the server's path before top-k kernels: a stable CUB radix sort of (key, row
//                          position) pairs over all 32 bits (DeviceRadixSort::SortPairs for one vector,
//                          DeviceSegmentedRadixSort::SortPairs for rows), the first k per row being the
//                          answer; the positions' iota is written inside the timed region (part of the work)
//   copy_d2d               cudaMemcpyAsync device to device of the input's bytes: the bandwidth yardstick
// Bandwidth: a method's read_gb_per_s is the input's bytes (read once) / its median time; copy_d2d's
// moved_gb_per_s counts its bytes twice (read + write, as CUDA's bandwidthTest counts a copy).
//
// Timing, as comparison_bench.cu: CUDA events around the call and nothing else; before every call,
// outside the events, the L2 is flushed (a buffer twice its size overwritten); the calls rotate over 3
// inputs (the kernels do not modify theirs, so nothing is restored); every iteration is queued before
// the host waits; methods interleave within an iteration. 3 warm-up calls, then 20 timed ones; median
// and min. Fewer for slow calls: cub_full_sort from 64M keys, and any method whose probe call (one timed
// call after verification) took over kSlowMs, get 1 warm-up and 5 timed calls.
//
// Correctness, once per case per method, outside timing, on input 0 (outputs poisoned first, with a
// poisoned guard after them): on the host, every row's k answers must be input elements (position in
// range, the key found there), strictly ascending in (key, position), and exactly k - 1 elements of the
// row must rank before the k-th answer; together that proves them the exact sorted top k. The guard
// must be intact and the input unchanged. Then every method's answer must equal the first one's, key
// for key and position for position. A failing method prints FAIL, is not timed and leaves no record;
// the run goes on with the others, lists the failures in the JSON and exits 1. CUDA errors end the run
// (exit 1, no JSON). No usable device: exit 2.
//
//   build/bin/top_k_bench [--json PATH] [--max-keys N] [--quick] [--runs N] [--warmup N]
//                         [--only NAME[,NAME...]] [--methods NAME[,NAME...]] [--no-full-sort]
//
// N takes a K, M or G suffix (binary). --quick leaves out the 256M cases. --only: an item that is a
// case's full name selects that case, any other item the cases whose name contains it. --methods: the
// methods to run, by full name (copy_d2d always runs).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cub/version.cuh>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/cuda_bench_harness.cuh"
#include "gpusort/kernels/key_transform.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"
#include "gpusort/kernels/top_k.h"

namespace {

namespace gk = gpusort::kernels;
using namespace gpusort::bench;  // the shared harness: Die, DeviceBuffer, EventPool, L2Flusher, ...

constexpr int kInputs = 3;            // inputs the iterations rotate through
constexpr double kSlowMs = 20.0;      // a probe call slower than this: 1 warm-up, 5 timed calls
constexpr int kSlowWarmup = 1, kSlowRuns = 5;
constexpr std::size_t kGuard = 256;   // poisoned elements after each output, which must stay poisoned
constexpr std::size_t kM = std::size_t{1} << 20;
constexpr std::size_t kMargin = std::size_t{256} << 20;  // device memory left for the runtime and CUB

const char* const kRadixSelect = "gpusort_radix_select";
const char* const kSmallK = "gpusort_small_k";
const char* const kThreadLists = "gpusort_thread_lists";
const char* const kFullSort = "cub_full_sort";
const char* const kCopy = "copy_d2d";
const char* const kWiden = "widen_bf16_keys";  // not "gpusort_": the report ranks those as top-k methods
const char* const kSmallK16 = "gpusort_small_k_16bit";
const char* const kRadixSelect16 = "gpusort_radix_select_16bit";
const char* const kRadixSelectRaw16 = "gpusort_radix_select_raw_bf16";
const char* const kTo16 = "to_ordered_bf16_16bit";

// ---------------------------------------------------------------------------------------------------
// Device memory left (bench/cuda_bench_harness.cuh has the rest of the harness).

std::size_t FreeDeviceBytes() {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

// ---------------------------------------------------------------------------------------------------
// Inputs, generated on the device.

__host__ __device__ inline std::uint64_t SplitMix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// gpusort::ToOrderedBits<float> (server/core/key_order.h) on the device; CheckOrderedBits tests it.
__device__ inline std::uint32_t OrderedBits(float key) {
  const std::uint32_t bits = __float_as_uint(key);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// Keys in [0, 1) on a 2^-24 grid (24 random bits, as torch.rand), as complemented ordered bits: the k
// smallest bits are the k largest keys (largest = true).
__global__ void GenerateKernel(std::uint32_t* out, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float key = static_cast<float>(SplitMix64(seed + i) >> 40) * 0x1p-24f;
    out[i] = ~OrderedBits(key);
  }
}

__global__ void OrderedBitsKernel(const float* in, std::uint32_t* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = OrderedBits(in[i]);
  }
}

// bfloat16 keys in [0, 1) on the bfloat16 grid (8 random bits: float's top half), raw, and as the kernels
// get them: the 16-bit ordered bits complemented (largest = true) and zero-extended to 32 bits.
__global__ void GenerateBf16Kernel(std::uint16_t* raw, std::uint32_t* out, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float key = static_cast<float>(SplitMix64(seed + i) >> 40) * 0x1p-24f;
    const auto bits = static_cast<std::uint16_t>(__float_as_uint(key) >> 16);  // truncated: stays below 1
    raw[i] = bits;
    out[i] = static_cast<std::uint16_t>(~(bits | 0x8000u));  // positive: sign bit set, then complemented
  }
}

// float16 keys in [0, 1) on the float16 grid (as torch.rand draws them: rounded toward zero, so they stay
// below 1), raw and as 16-bit ordered bits complemented, zero-extended. The ordered-bits transform is
// the same for both 16-bit float formats (sign at bit 15, then magnitude), so every 16-bit method but
// the bfloat16 widening runs on these too.
__global__ void GenerateF16Kernel(std::uint16_t* raw, std::uint32_t* out, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float key = static_cast<float>(SplitMix64(seed + i) >> 40) * 0x1p-24f;
    const auto bits = static_cast<std::uint16_t>(__half_as_ushort(__float2half_rz(key)));
    raw[i] = bits;
    out[i] = static_cast<std::uint16_t>(~(bits | 0x8000u));
  }
}

// Row-relative positions 0..row_length-1 per row: the full sort's values.
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

template <typename T>
std::vector<T> CopyToHost(const void* device, std::size_t count, cudaStream_t stream) {
  std::vector<T> host(count);
  CUDA_CHECK(cudaMemcpyAsync(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// The device's OrderedBits must keep the float order (IEEE totalOrder, as server/core/key_order.h, which
// this C++17 file cannot include): keys listed ascending must come out strictly ascending.
void CheckOrderedBits(cudaStream_t stream) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> ascending = {-inf, -1.0f, -0x1p-24f, -1e-45f, -0.0f, 0.0f, 1e-45f,
                                        0x1p-24f, 0.5f, 1.0f - 0x1p-24f, 1.0f, inf};
  DeviceBuffer in(ascending.size() * sizeof(float)), out(ascending.size() * sizeof(std::uint32_t));
  CUDA_CHECK(cudaMemcpyAsync(in.get(), ascending.data(), in.bytes(), cudaMemcpyHostToDevice, stream));
  OrderedBitsKernel<<<1, 32, 0, stream>>>(in.as<float>(), out.as<std::uint32_t>(), ascending.size());
  CUDA_CHECK(cudaGetLastError());
  const std::vector<std::uint32_t> bits = CopyToHost<std::uint32_t>(out.get(), ascending.size(), stream);
  for (std::size_t i = 1; i < ascending.size(); ++i) {
    if (bits[i - 1] >= bits[i]) {
      Die("the device's ordered bits do not keep the order of " + std::to_string(ascending[i - 1]) + " and " +
          std::to_string(ascending[i]));
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Cases and results.

struct Case {
  std::string name;  // joins with top_k_anchor.py's records
  std::size_t rows;
  std::size_t row_length;
  std::size_t k;
  bool bf16 = false;  // 16-bit float keys (bfloat16 unless f16), widened (see the top)
  bool f16 = false;   // float16 rather than bfloat16 (no bfloat16 widening)
  std::size_t n() const { return rows * row_length; }
};

struct Options {
  std::string json_path;
  std::size_t max_keys = std::size_t{1} << 28;
  bool quick = false;
  bool full_sort = true;
  int runs = 20;
  int warmup = 3;
  std::vector<std::string> only;
  std::vector<std::string> methods;  // empty: all
};

struct Record {
  std::string case_name, method;
  std::size_t n = 0, rows = 0, row_length = 0, k = 0;
  int warmup = 0, runs = 0;
  double median_ms = 0, min_ms = 0;
};

// Input bytes (4 per key, read once) per second, in GB/s (10^9).
double ReadGBPerSecond(std::size_t n, double ms) {
  return ms > 0 ? static_cast<double>(n) * sizeof(std::uint32_t) / (ms * 1e-3) / 1e9 : 0;
}


// The k answers of every row: rows * k keys (ordered bits) and positions within the row.
struct Answer {
  std::vector<std::uint32_t> keys;
  std::vector<std::int64_t> positions;
};

// "" when `a` is exactly the sorted top k of every row of `input` (rows x length), else what is wrong:
// every answer an input element, strictly ascending in (key, position), and exactly k - 1 elements of the
// row ranked before the k-th. k distinct elements all ranked at or before the k-th, with exactly k such
// elements in the row, are the top k.
std::string ProveTopK(const std::vector<std::uint32_t>& input, std::size_t rows, std::size_t length, std::size_t k,
                      const Answer& a) {
  if (a.keys.size() != rows * k || a.positions.size() != rows * k) return "answer of the wrong size";
  for (std::size_t row = 0; row < rows; ++row) {
    const std::uint32_t* in = input.data() + row * length;
    const std::string where = "row " + std::to_string(row) + ", answer ";
    for (std::size_t j = 0; j < k; ++j) {
      const std::uint32_t key = a.keys[row * k + j];
      const std::int64_t position = a.positions[row * k + j];
      if (position < 0 || static_cast<std::size_t>(position) >= length) {
        return where + std::to_string(j) + ": position " + std::to_string(position) + " out of range";
      }
      if (in[position] != key) {
        return where + std::to_string(j) + ": key " + std::to_string(key) + " is not the input's " +
               std::to_string(in[position]) + " at position " + std::to_string(position);
      }
      if (j > 0) {
        const std::uint32_t prev_key = a.keys[row * k + j - 1];
        const std::int64_t prev_position = a.positions[row * k + j - 1];
        if (prev_key > key || (prev_key == key && prev_position >= position)) {
          return where + std::to_string(j) + ": not after answer " + std::to_string(j - 1) +
                 " in (key, position) order (" + std::to_string(prev_key) + ", " + std::to_string(prev_position) +
                 ") then (" + std::to_string(key) + ", " + std::to_string(position) + ")";
        }
      }
    }
    const std::uint32_t last_key = a.keys[row * k + k - 1];
    const auto last_position = static_cast<std::size_t>(a.positions[row * k + k - 1]);
    std::size_t before = 0;  // elements ranked before the k-th answer
    for (std::size_t i = 0; i < length; ++i) {
      before += in[i] < last_key || (in[i] == last_key && i < last_position);
    }
    if (before != k - 1) {
      return where + std::to_string(k - 1) + " (the k-th): " + std::to_string(before) +
             " elements rank before it, not k - 1 = " + std::to_string(k - 1);
    }
  }
  return "";
}

// ---------------------------------------------------------------------------------------------------
// One case: its inputs, its methods, verification and timing.

class CaseRunner {
 public:
  CaseRunner(const Case& c, const gk::Stream& stream, const Options& options, L2Flusher& flusher,
             std::vector<std::string>* failures)
      : case_(c),
        n_(c.n()),
        results_(c.rows * c.k),
        stream_(stream),
        native_(static_cast<cudaStream_t>(stream.native())),
        options_(options),
        flusher_(flusher),
        failures_(failures) {}

  // Inputs, copy target and one output pair per method: false (after printing SKIP) without room.
  bool Prepare() {
    const std::size_t input_bytes = n_ * sizeof(std::uint32_t);
    const std::size_t raw_bytes = case_.bf16 ? n_ * sizeof(std::uint16_t) : 0;
    const std::size_t need = (kInputs + 1) * input_bytes + kInputs * raw_bytes + 5 * (results_ + kGuard) * 12;
    if (need + kMargin > FreeDeviceBytes()) {
      std::printf("SKIP %s: needs %zu MiB, %zu MiB free\n", case_.name.c_str(), need >> 20,
                  FreeDeviceBytes() >> 20);
      return false;
    }
    for (int r = 0; r < kInputs; ++r) inputs_.emplace_back(input_bytes);
    copy_target_ = DeviceBuffer(input_bytes);
    for (int r = 0; r < kInputs; ++r) {
      if (case_.bf16) {
        raw_.emplace_back(raw_bytes);
        auto* generate = case_.f16 ? GenerateF16Kernel : GenerateBf16Kernel;
        generate<<<GridFor(n_), 256, 0, native_>>>(raw_[r].as<std::uint16_t>(), inputs_[r].as<std::uint32_t>(), n_,
                                                   SplitMix64(1000 + r));
      } else {
        GenerateKernel<<<GridFor(n_), 256, 0, native_>>>(inputs_[r].as<std::uint32_t>(), n_,
                                                         SplitMix64(1000 + r));
      }
      CUDA_CHECK(cudaGetLastError());
    }
    input0_ = CopyToHost<std::uint32_t>(inputs_[0].get(), n_, native_);
    DefineMethods();
    return true;
  }

  std::vector<Record> Run() {
    VerifyAll();
    return Time();
  }

 private:
  struct Method {
    std::string name;
    bool verified = true;  // copy_d2d has no answer to check
    int warmup = 0, runs = 0;
    std::function<void(int input)> enqueue;  // queues one call on input r
    std::function<Answer()> collect;         // copies the answer of the last call to the host
    std::function<void()> poison;            // poisons outputs and guards before the checked call
    std::function<std::string()> check_guards;  // "" or what was written past the outputs
  };

  using TopKTemp = gk::Status (*)(const gk::TopKArgs&, std::size_t*);
  using TopKCall = gk::Status (*)(const gk::TopKArgs&, void*, std::size_t, const gk::Stream&);

  bool Wanted(const std::string& name) const {
    return options_.methods.empty() ||
           std::find(options_.methods.begin(), options_.methods.end(), name) != options_.methods.end();
  }

  void Fail(const std::string& method, const std::string& what) {
    const std::string line = case_.name + " " + method + ": " + what;
    std::printf("FAIL %s\n", line.c_str());
    std::fflush(stdout);
    failures_->push_back(line);
  }

  gk::TopKArgs Args(int input, const DeviceBuffer& keys, const DeviceBuffer& positions) const {
    gk::TopKArgs args;
    args.key_width = gk::KeyWidth::k32;
    args.rows = case_.rows;
    args.row_length = case_.row_length;
    args.k = case_.k;
    args.sorted = true;
    args.keys = inputs_[input].get();
    args.out_keys = keys.get();
    args.out_positions = positions.as<std::int64_t>();
    return args;
  }

  // One of the kernels of top_k.h; false (after FAIL or SKIP) when it cannot run here.
  bool AddGpusort(const std::string& name, TopKTemp temp_fn, TopKCall call_fn) {
    const std::size_t slot = outputs_.size();
    outputs_.emplace_back(DeviceBuffer((results_ + kGuard) * sizeof(std::uint32_t)),
                          DeviceBuffer((results_ + kGuard) * sizeof(std::int64_t)));
    std::size_t bytes = 0;
    const gk::Status status = temp_fn(Args(0, outputs_[slot].first, outputs_[slot].second), &bytes);
    if (!status.ok()) {
      Fail(name, "temp size query failed: " + status.message());
      return false;
    }
    if (bytes > temp_.bytes()) {
      if (bytes + kMargin > FreeDeviceBytes() + temp_.bytes()) {
        std::printf("SKIP %s %s: temp storage needs %zu MiB, %zu MiB free\n", case_.name.c_str(), name.c_str(),
                    bytes >> 20, FreeDeviceBytes() >> 20);
        return false;
      }
      temp_ = DeviceBuffer();  // the methods share one temp buffer, as large as the largest asks
      temp_ = DeviceBuffer(bytes);
    }
    Method m;
    m.name = name;
    m.enqueue = [this, slot, call_fn, name](int input) {
      const gk::Status s = call_fn(Args(input, outputs_[slot].first, outputs_[slot].second), temp_.get(),
                                   temp_.bytes(), stream_);
      if (!s.ok()) Die(case_.name + " " + name + " failed after passing verification: " + s.message());
    };
    m.collect = [this, slot] {
      Answer a;
      a.keys = CopyToHost<std::uint32_t>(outputs_[slot].first.get(), results_, native_);
      a.positions = CopyToHost<std::int64_t>(outputs_[slot].second.get(), results_, native_);
      return a;
    };
    m.poison = [this, slot] {
      CUDA_CHECK(cudaMemsetAsync(outputs_[slot].first.get(), 0xFF, outputs_[slot].first.bytes(), native_));
      CUDA_CHECK(cudaMemsetAsync(outputs_[slot].second.get(), 0xFF, outputs_[slot].second.bytes(), native_));
    };
    m.check_guards = [this, slot]() -> std::string {
      const auto keys = CopyToHost<std::uint32_t>(outputs_[slot].first.as<std::uint32_t>() + results_, kGuard,
                                                  native_);
      const auto positions = CopyToHost<std::int64_t>(outputs_[slot].second.as<std::int64_t>() + results_,
                                                      kGuard, native_);
      for (std::uint32_t key : keys) {
        if (key != 0xFFFFFFFFu) return "wrote past the end of out_keys";
      }
      for (std::int64_t position : positions) {
        if (position != -1) return "wrote past the end of out_positions";
      }
      return "";
    };
    // The first call of a kernel checks its arguments on the host; a refusal is a failure, not a crash.
    m.poison();
    const gk::Status first = call_fn(Args(0, outputs_[slot].first, outputs_[slot].second), temp_.get(),
                                     temp_.bytes(), stream_);
    if (!first.ok()) {
      Fail(name, "the call failed: " + first.message());
      return false;
    }
    methods_.push_back(std::move(m));
    return true;
  }

  // The stable CUB radix sort of (key, row position) pairs; false (after SKIP) without room.
  bool AddFullSort() {
    const int count = static_cast<int>(n_), rows = static_cast<int>(case_.rows);
    std::size_t bytes = 0;
    auto sort = [this, count, rows](void* temp, std::size_t& temp_bytes, int input) {
      const auto* keys_in = inputs_[input].as<std::uint32_t>();
      if (case_.rows == 1) {
        CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, sorted_keys_.as<std::uint32_t>(),
                                                   iota_.as<std::uint32_t>(), sorted_positions_.as<std::uint32_t>(),
                                                   count, 0, 32, native_));
      } else {
        const int* offsets = offsets_.as<int>();
        CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairs(
            temp, temp_bytes, keys_in, sorted_keys_.as<std::uint32_t>(), iota_.as<std::uint32_t>(),
            sorted_positions_.as<std::uint32_t>(), count, rows, offsets, offsets + 1, 0, 32, native_));
      }
    };
    sort(nullptr, bytes, 0);
    const std::size_t buffers = 3 * n_ * sizeof(std::uint32_t) + (case_.rows + 1) * sizeof(int);
    if (buffers + bytes + kMargin > FreeDeviceBytes()) {
      std::printf("SKIP %s %s: needs %zu MiB, %zu MiB free\n", case_.name.c_str(), kFullSort,
                  (buffers + bytes) >> 20, FreeDeviceBytes() >> 20);
      return false;
    }
    iota_ = DeviceBuffer(n_ * sizeof(std::uint32_t));
    sorted_keys_ = DeviceBuffer(n_ * sizeof(std::uint32_t));
    sorted_positions_ = DeviceBuffer(n_ * sizeof(std::uint32_t));
    offsets_ = DeviceBuffer((case_.rows + 1) * sizeof(int));
    full_temp_ = DeviceBuffer(std::max<std::size_t>(bytes, 1));
    OffsetsKernel<<<GridFor(case_.rows + 1), 256, 0, native_>>>(offsets_.as<int>(), case_.rows, case_.row_length);
    CUDA_CHECK(cudaGetLastError());
    Method m;
    m.name = kFullSort;
    m.enqueue = [this, sort](int input) {
      RowIotaKernel<<<GridFor(n_), 256, 0, native_>>>(iota_.as<std::uint32_t>(), n_, case_.row_length);
      CUDA_CHECK(cudaGetLastError());
      std::size_t temp_bytes = full_temp_.bytes();
      sort(full_temp_.get(), temp_bytes, input);
    };
    // The answer: the first k of every sorted row.
    m.collect = [this] {
      const auto keys = CopyToHost<std::uint32_t>(sorted_keys_.get(), n_, native_);
      const auto positions = CopyToHost<std::uint32_t>(sorted_positions_.get(), n_, native_);
      Answer a;
      for (std::size_t row = 0; row < case_.rows; ++row) {
        const std::size_t b = row * case_.row_length;
        a.keys.insert(a.keys.end(), keys.begin() + b, keys.begin() + b + case_.k);
        a.positions.insert(a.positions.end(), positions.begin() + b, positions.begin() + b + case_.k);
      }
      return a;
    };
    m.poison = [this] {
      CUDA_CHECK(cudaMemsetAsync(sorted_keys_.get(), 0xFF, sorted_keys_.bytes(), native_));
      CUDA_CHECK(cudaMemsetAsync(sorted_positions_.get(), 0xFF, sorted_positions_.bytes(), native_));
    };
    m.check_guards = [] { return std::string(); };
    if (n_ >= 64 * kM) {  // a 2^28-pair sort takes tens of ms: fewer calls
      m.warmup = std::min(options_.warmup, kSlowWarmup);
      m.runs = std::min(options_.runs, kSlowRuns);
    }
    methods_.push_back(std::move(m));
    return true;
  }

  void AddCopy() {
    Method m;
    m.name = kCopy;
    m.verified = false;
    m.enqueue = [this](int input) {
      CUDA_CHECK(cudaMemcpyAsync(copy_target_.get(), inputs_[input].get(), n_ * sizeof(std::uint32_t),
                                 cudaMemcpyDeviceToDevice, native_));
    };
    methods_.push_back(std::move(m));
  }

  // The server's widening of raw bfloat16 keys, checked once against the bits the kernels get.
  void AddWiden() {
    auto widen = [this](int input) {
      const gk::Status s = gk::WidenToOrderedBitsAsync(2, gk::KeyKind::kFloat, /*complement=*/true, raw_[input].get(),
                                                       copy_target_.as<std::uint32_t>(), n_,
                                                       or_and_.as<std::uint64_t>(), stream_);
      if (!s.ok()) Die("WidenToOrderedBitsAsync: " + s.message());
    };
    widen(0);
    CUDA_CHECK(cudaStreamSynchronize(native_));
    if (CopyToHost<std::uint32_t>(copy_target_.get(), n_, native_) != input0_) {
      Die(case_.name + ": WidenToOrderedBitsAsync does not give the bits the kernels get");
    }
    Method m;
    m.name = kWiden;
    m.verified = false;
    m.enqueue = widen;
    methods_.push_back(std::move(m));
  }

  // A selection on the keys' own 16 bits (KeyWidth::k16; bf16 cases only): what a native 16-bit path
  // reads, 2 bytes a key. The ordered bits are made once per input, outside timing, by the in-place
  // 16-bit transform, which is timed on its own (kTo16). `raw`: the kernel reads the raw bfloat16 keys
  // and orders them as it reads (TopKArgs::raw_keys, RADIX_SELECT only: keys in a caller's device
  // region). The answer, zero-extended, must equal the others'.
  struct Sixteen {
    DeviceBuffer temp, out_keys, out_positions;
  };

  void AddSixteenBit(const char* name, TopKTemp temp_fn, TopKCall call_fn, bool raw) {
    if (!Wanted(name)) return;
    gk::TopKArgs args = Args(0, copy_target_, copy_target_);
    args.key_width = gk::KeyWidth::k16;
    args.raw_keys = raw;
    args.raw_kind = gk::KeyKind::kFloat;
    args.raw_complement = true;
    std::size_t bytes = 0;
    if (!temp_fn(args, &bytes).ok()) return Fail(name, "refused k16 (or k over its limit)");
    auto& b = *sixteen_.emplace_back(std::make_unique<Sixteen>());
    b.temp = DeviceBuffer(std::max<std::size_t>(bytes, 1));
    b.out_keys = DeviceBuffer((results_ + kGuard) * sizeof(std::uint16_t));
    b.out_positions = DeviceBuffer((results_ + kGuard) * sizeof(std::int64_t));
    if (bits16_.empty()) {
      for (int r = 0; r < kInputs; ++r) {
        bits16_.emplace_back(n_ * sizeof(std::uint16_t));
        CUDA_CHECK(cudaMemcpyAsync(bits16_[r].get(), raw_[r].get(), n_ * 2, cudaMemcpyDeviceToDevice, native_));
        To16(bits16_[r].get());
      }
      Method to16;
      to16.name = kTo16;
      to16.verified = false;
      to16.enqueue = [this](int) { To16(copy_target_.get()); };  // in place on scratch: the bits change, the work not
      methods_.push_back(std::move(to16));
    }
    Method m;
    m.name = name;
    m.enqueue = [this, args, call_fn, raw, name, &b](int input) mutable {
      args.keys = raw ? raw_[input].get() : bits16_[input].get();
      args.out_keys = b.out_keys.get();
      args.out_positions = b.out_positions.as<std::int64_t>();
      const gk::Status s = call_fn(args, b.temp.get(), b.temp.bytes(), stream_);
      if (!s.ok()) Die(case_.name + " " + name + ": " + s.message());
    };
    m.collect = [this, &b] {
      Answer a;
      const auto keys = CopyToHost<std::uint16_t>(b.out_keys.get(), results_, native_);
      a.keys.assign(keys.begin(), keys.end());  // zero-extended, as the widened bits are
      a.positions = CopyToHost<std::int64_t>(b.out_positions.get(), results_, native_);
      return a;
    };
    m.poison = [this, &b] {
      CUDA_CHECK(cudaMemsetAsync(b.out_keys.get(), 0xFF, b.out_keys.bytes(), native_));
      CUDA_CHECK(cudaMemsetAsync(b.out_positions.get(), 0xFF, b.out_positions.bytes(), native_));
    };
    m.check_guards = [this, &b]() -> std::string {
      const auto keys = CopyToHost<std::uint16_t>(b.out_keys.as<std::uint16_t>() + results_, kGuard, native_);
      const auto positions = CopyToHost<std::int64_t>(b.out_positions.as<std::int64_t>() + results_, kGuard, native_);
      for (std::uint16_t key : keys) {
        if (key != 0xFFFFu) return "wrote past the end of out_keys";
      }
      for (std::int64_t position : positions) {
        if (position != -1) return "wrote past the end of out_positions";
      }
      return "";
    };
    methods_.push_back(std::move(m));
  }

  // Raw bfloat16 keys -> their 16-bit ordered bits, complemented (largest first), in place.
  void To16(void* keys) {
    const gk::Status s = gk::ToOrderedBitsAsync(gk::KeyWidth::k16, gk::KeyKind::kFloat, /*complement=*/true, keys, n_,
                                                or_and_.as<std::uint64_t>(), stream_);
    if (!s.ok()) Die("ToOrderedBitsAsync(k16): " + s.message());
  }

  void DefineMethods() {
    if (Wanted(kRadixSelect)) AddGpusort(kRadixSelect, gk::RadixSelectTopKTempBytes, gk::RadixSelectTopK);
    if (Wanted(kSmallK) && case_.k <= gk::kSmallTopKMaxK) {
      AddGpusort(kSmallK, gk::SmallTopKTempBytes, gk::SmallTopK);
    }
    if (Wanted(kThreadLists) && case_.k <= gk::kThreadListsMaxK) {
      AddGpusort(kThreadLists, gk::ThreadListsTopKTempBytes, gk::ThreadListsTopK);
    }
    if (options_.full_sort && Wanted(kFullSort)) AddFullSort();
    if (case_.bf16) or_and_ = DeviceBuffer(2 * sizeof(std::uint64_t));  // the 16-bit transforms' accumulator
    if (case_.bf16 && !case_.f16) AddWiden();
    if (case_.bf16) {
      AddSixteenBit(kSmallK16, gk::SmallTopKTempBytes, gk::SmallTopK, false);
      AddSixteenBit(kRadixSelect16, gk::RadixSelectTopKTempBytes, gk::RadixSelectTopK, false);
      AddSixteenBit(kRadixSelectRaw16, gk::RadixSelectTopKTempBytes, gk::RadixSelectTopK, true);
    }
    AddCopy();
    for (Method& m : methods_) {
      if (m.runs == 0) {
        m.warmup = options_.warmup;
        m.runs = options_.runs;
      }
    }
    CUDA_CHECK(cudaStreamSynchronize(native_));
  }

  // --- verification --------------------------------------------------------------------------------

  // Each method once on input 0, proven on the host, then compared with the first method's answer.
  // Failing methods are dropped; the ones left are timed.
  void VerifyAll() {
    std::vector<Method> passed;
    const Answer* first = nullptr;
    std::string first_name;
    std::vector<Answer> answers;
    answers.reserve(methods_.size());
    for (Method& m : methods_) {
      if (!m.verified) {
        passed.push_back(std::move(m));
        continue;
      }
      m.poison();
      m.enqueue(0);
      CUDA_CHECK(cudaGetLastError());
      CUDA_CHECK(cudaStreamSynchronize(native_));
      answers.push_back(m.collect());
      const Answer& a = answers.back();
      std::string wrong = m.check_guards();
      if (wrong.empty() && CopyToHost<std::uint32_t>(inputs_[0].get(), n_, native_) != input0_) {
        wrong = "the input keys changed";
      }
      if (wrong.empty()) wrong = ProveTopK(input0_, case_.rows, case_.row_length, case_.k, a);
      if (wrong.empty() && first != nullptr) {
        for (std::size_t i = 0; i < results_; ++i) {
          if (a.keys[i] != first->keys[i] || a.positions[i] != first->positions[i]) {
            wrong = "answer " + std::to_string(i) + " (" + std::to_string(a.keys[i]) + ", " +
                    std::to_string(a.positions[i]) + ") differs from " + first_name + "'s (" +
                    std::to_string(first->keys[i]) + ", " + std::to_string(first->positions[i]) + ")";
            break;
          }
        }
      }
      if (!wrong.empty()) {
        Fail(m.name, wrong);
        continue;
      }
      if (first == nullptr) {
        first = &a;  // answers was reserved: the address stays valid
        first_name = m.name;
      }
      passed.push_back(std::move(m));
    }
    methods_ = std::move(passed);
  }

  // --- timing --------------------------------------------------------------------------------------

  // One timed call after warm-up and verification; slow methods get fewer calls.
  void Probe(Method& m) {
    EventPool events(2);
    flusher_.Enqueue(native_);
    CUDA_CHECK(cudaEventRecord(events[0], native_));
    m.enqueue(1 % kInputs);
    CUDA_CHECK(cudaEventRecord(events[1], native_));
    CUDA_CHECK(cudaStreamSynchronize(native_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, events[0], events[1]));
    if (ms > kSlowMs) {
      m.warmup = std::min(m.warmup, kSlowWarmup);
      m.runs = std::min(m.runs, kSlowRuns);
    }
  }

  std::vector<Record> Time() {
    const std::size_t count = methods_.size();
    std::vector<int> iterations(count);
    std::vector<std::size_t> first_event(count);
    std::size_t events_needed = 0;
    int most = 0;
    for (std::size_t i = 0; i < count; ++i) {
      Probe(methods_[i]);
      iterations[i] = methods_[i].warmup + methods_[i].runs;
      first_event[i] = events_needed;
      events_needed += 2 * static_cast<std::size_t>(iterations[i]);
      most = std::max(most, iterations[i]);
    }
    EventPool events(events_needed);
    auto start = [&](std::size_t i, int it) { return events[first_event[i] + 2 * it]; };
    auto stop = [&](std::size_t i, int it) { return events[first_event[i] + 2 * it + 1]; };
    // Methods interleave within an iteration, so clock and thermal drift touches all of them alike.
    for (int it = 0; it < most; ++it) {
      for (std::size_t i = 0; i < count; ++i) {
        if (it >= iterations[i]) continue;
        flusher_.Enqueue(native_);
        CUDA_CHECK(cudaEventRecord(start(i, it), native_));
        methods_[i].enqueue(it % kInputs);
        CUDA_CHECK(cudaEventRecord(stop(i, it), native_));
      }
    }
    CUDA_CHECK(cudaStreamSynchronize(native_));
    CUDA_CHECK(cudaGetLastError());

    std::vector<Record> records;
    for (std::size_t i = 0; i < count; ++i) {
      std::vector<double> ms;
      for (int it = methods_[i].warmup; it < iterations[i]; ++it) {
        float elapsed = 0;
        CUDA_CHECK(cudaEventElapsedTime(&elapsed, start(i, it), stop(i, it)));
        ms.push_back(elapsed);
      }
      Record record;
      record.case_name = case_.name;
      record.method = methods_[i].name;
      record.n = n_;
      record.rows = case_.rows;
      record.row_length = case_.row_length;
      record.k = case_.k;
      record.warmup = methods_[i].warmup;
      record.runs = methods_[i].runs;
      record.median_ms = Median(ms);
      record.min_ms = *std::min_element(ms.begin(), ms.end());
      records.push_back(record);
    }
    return records;
  }

  const Case& case_;
  const std::size_t n_, results_;
  const gk::Stream& stream_;
  const cudaStream_t native_;
  const Options& options_;
  L2Flusher& flusher_;
  std::vector<std::string>* failures_;

  std::vector<DeviceBuffer> inputs_;  // kInputs
  std::vector<DeviceBuffer> raw_;     // bf16 cases: kInputs raw bfloat16 arrays
  std::vector<DeviceBuffer> bits16_;  // bf16 cases: their 16-bit ordered bits, complemented (SMALL_K k16)
  std::vector<std::unique_ptr<Sixteen>> sixteen_;  // the 16-bit methods' buffers (stable addresses)
  DeviceBuffer or_and_;               // 16-bit cases: the transforms' varying-bits accumulator
  std::vector<std::uint32_t> input0_;
  DeviceBuffer copy_target_, temp_;
  std::vector<std::pair<DeviceBuffer, DeviceBuffer>> outputs_;  // per gpusort method: keys, positions
  DeviceBuffer iota_, sorted_keys_, sorted_positions_, offsets_, full_temp_;  // cub_full_sort
  std::vector<Method> methods_;
};

// ---------------------------------------------------------------------------------------------------
// The case list, the command line and the output.

std::vector<Case> AllCases(const Options& options) {
  std::vector<Case> cases;
  if (!options.quick) {
    for (std::size_t k : {10, 100, 1000, 100000}) {
      cases.push_back({"f32_256M_k" + std::to_string(k), 1, 256 * kM, k});
    }
  }
  cases.push_back({"f32_16M_k100", 1, 16 * kM, 100});
  cases.push_back({"f32_rows_1024x4096_k10", 1024, 4096, 10});
  cases.push_back({"f32_rows_4096x1024_k32", 4096, 1024, 32});
  cases.push_back({"f32_rows_65536x256_k10", 65536, 256, 10});
  if (!options.quick) cases.push_back({"bf16_256M_k100", 1, 256 * kM, 100, true});
  cases.push_back({"bf16_rows_128x131072_k50", 128, 131072, 50, true});
  cases.push_back({"bf16_rows_1024x32000_k50", 1024, 32000, 50, true});
  cases.push_back({"f16_rows_128x131072_k50", 128, 131072, 50, true, true});
  cases.push_back({"f16_rows_1024x32000_k50", 1024, 32000, 50, true, true});
  return cases;
}

bool Selected(const Case& c, const Options& options, const std::vector<Case>& all) {
  if (c.n() > options.max_keys) return false;
  if (options.only.empty()) return true;
  for (const std::string& item : options.only) {
    const bool full_name = std::any_of(all.begin(), all.end(), [&](const Case& o) { return o.name == item; });
    if (full_name ? c.name == item : c.name.find(item) != std::string::npos) return true;
  }
  return false;
}


std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    if (end > begin) out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
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
    else if (arg == "--no-full-sort") options.full_sort = false;
    else if (arg == "--only") options.only = SplitCommas(value());
    else if (arg == "--methods") options.methods = SplitCommas(value());
    else if (arg == "--runs") options.runs = std::max<int>(1, static_cast<int>(ParseCount(value())));
    else if (arg == "--warmup") options.warmup = static_cast<int>(ParseCount(value()));
    else if (arg == "--help" || arg == "-h") {
      std::printf("usage: top_k_bench [--json PATH] [--max-keys N[K|M|G]] [--quick] [--runs N] [--warmup N]\n"
                  "                   [--only NAME[,NAME...]] [--methods NAME[,NAME...]] [--no-full-sort]\n"
                  "methods: %s %s %s %s (%s always runs)\n",
                  kRadixSelect, kSmallK, kThreadLists, kFullSort, kCopy);
      std::exit(0);
    } else {
      Die("unknown argument " + arg + " (see --help)", 2);
    }
  }
  for (const std::string& m : options.methods) {
    if (m != kRadixSelect && m != kSmallK && m != kThreadLists && m != kFullSort && m != kCopy && m != kWiden &&
        m != kSmallK16 && m != kRadixSelect16 && m != kRadixSelectRaw16 && m != kTo16) {
      Die("unknown method " + m + " (see --help)", 2);
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

const char* const kInputNote =
    "float32 uniform in [0, 1) on a 2^-24 grid (as torch.rand), as ordered bits complemented for "
    "largest = true, prepared on the device before timing; sorted = true";

void WriteJson(const std::string& path, const DeviceInfo& device, const Options& options,
               const std::vector<Record>& records, const std::vector<std::string>& failures) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) Die("cannot write " + path);
  std::fprintf(f, "{\n  \"device\": %s,\n", JsonString(device.props.name).c_str());
  std::fprintf(f, "  \"compute_capability\": \"%d.%d\",\n", device.props.compute_major,
               device.props.compute_minor);
  std::fprintf(f, "  \"cuda_runtime\": %d,\n  \"cuda_driver\": %d,\n  \"cub_version\": %d,\n",
               device.runtime_version, device.driver_version, CUB_VERSION);
  std::fprintf(f, "  \"runs\": %d,\n  \"warmup\": %d,\n  \"slow_ms\": %.1f,\n  \"slow_runs\": %d,\n",
               options.runs, options.warmup, kSlowMs, kSlowRuns);
  std::fprintf(f, "  \"rotating_inputs\": %d,\n  \"l2_flush_bytes\": %zu,\n", kInputs, device.l2_flush_bytes);
  std::fprintf(f, "  \"small_top_k_max_k\": %zu,\n  \"thread_lists_max_k\": %zu,\n", gk::kSmallTopKMaxK,
               gk::kThreadListsMaxK);
  std::fprintf(f, "  \"input\": %s,\n  \"failures\": [", JsonString(kInputNote).c_str());
  for (std::size_t i = 0; i < failures.size(); ++i) {
    std::fprintf(f, "%s\n    %s", i ? "," : "", JsonString(failures[i]).c_str());
  }
  std::fprintf(f, "%s],\n  \"records\": [\n", failures.empty() ? "" : "\n  ");
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    const double read = ReadGBPerSecond(r.n, r.median_ms);
    std::fprintf(f,
                 "    {\"case\": %s, \"n\": %zu, \"rows\": %zu, \"row_length\": %zu, \"k\": %zu, \"method\": %s, "
                 "\"median_ms\": %.6f, \"min_ms\": %.6f, \"read_gb_per_s\": %.2f, ",
                 JsonString(r.case_name).c_str(), r.n, r.rows, r.row_length, r.k, JsonString(r.method).c_str(),
                 r.median_ms, r.min_ms, read);
    if (r.method == kCopy) std::fprintf(f, "\"moved_gb_per_s\": %.2f, ", 2 * read);
    std::fprintf(f, "\"warmup\": %d, \"runs\": %d}%s\n", r.warmup, r.runs, i + 1 < records.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  if (std::fclose(f) != 0) Die("error writing " + path);
}

void PrintHeader() {
  std::printf("%-24s %13s %7s %-22s %10s %10s %9s %8s %6s\n", "case", "rows x len", "k", "method", "median_ms",
              "min_ms", "read GB/s", "x copy", "runs");
}

// One line per method; "x copy" is its read bandwidth over the copy's (read + write) bandwidth.
void PrintCase(const std::vector<Record>& records) {
  double copy_gbps = 0;
  for (const Record& r : records) {
    if (r.method == kCopy) copy_gbps = 2 * ReadGBPerSecond(r.n, r.median_ms);
  }
  for (const Record& r : records) {
    const std::string shape = std::to_string(r.rows) + "x" + std::to_string(r.row_length);
    const double read = ReadGBPerSecond(r.n, r.median_ms);
    std::printf("%-24s %13s %7zu %-22s %10.4f %10.4f %9.1f %8.3f %6d\n", r.case_name.c_str(), shape.c_str(), r.k,
                r.method.c_str(), r.median_ms, r.min_ms, read, copy_gbps > 0 ? read / copy_gbps : 0.0, r.runs);
  }
  std::fflush(stdout);
}

DeviceInfo OpenDevice() {
  std::string why_none;
  if (gk::CountDevices(&why_none) == 0) Die("no usable CUDA device: " + why_none, 2);
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
  CheckOrderedBits(static_cast<cudaStream_t>(stream.native()));
  L2Flusher flusher;
  device.l2_flush_bytes = flusher.bytes();
  std::printf("device: %s (sm_%d%d, %d SMs, %zu MiB), CUDA runtime %d, driver %d, CUB %d\n",
              device.props.name.c_str(), device.props.compute_major, device.props.compute_minor,
              device.props.multiprocessors, device.props.total_memory >> 20, device.runtime_version,
              device.driver_version, CUB_VERSION);
  std::printf("keys: %s\n", kInputNote);
  std::printf("median of %d runs after %d warm-up (%d after %d for calls over %.0f ms and %s from 64M keys), "
              "%d rotating inputs, L2 flushed (%zu MiB) before each\n",
              options.runs, options.warmup, kSlowRuns, kSlowWarmup, kSlowMs, kFullSort, kInputs,
              device.l2_flush_bytes >> 20);
  PrintHeader();

  std::vector<Record> records;
  std::vector<std::string> failures;
  const std::vector<Case> all = AllCases(options);
  for (const Case& c : all) {
    if (!Selected(c, options, all)) continue;
    CaseRunner runner(c, stream, options, flusher, &failures);
    if (!runner.Prepare()) continue;
    const std::vector<Record> mine = runner.Run();
    PrintCase(mine);
    records.insert(records.end(), mine.begin(), mine.end());
  }
  if (!options.json_path.empty()) {
    WriteJson(options.json_path, device, options, records, failures);
    std::printf("wrote %s (%zu records)\n", options.json_path.c_str(), records.size());
  }
  if (!failures.empty()) {
    std::printf("FAILED: %zu method(s) gave a wrong answer or an error; they have no timings:\n", failures.size());
    for (const std::string& f : failures) std::printf("  FAIL %s\n", f.c_str());
    return 1;
  }
  std::printf("all answers verified\n");
  return 0;
}
