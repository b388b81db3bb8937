// The device radix sort of kernels/ beside a direct CUB call, kernel time only (no staging, no PCIe).
//
// Every case (key type, size, payload) times three methods on the same inputs, in the same run:
//   gpusort_auto     kernels::RadixSort over ordered key bits, sorting only the bits that vary across
//                    the keys. The range is found on the host from the generated keys (OR ^ AND of
//                    their ordered bits), exactly as the server finds it while it stages keys
//                    (server/backend/cuda/staging.h, VaryingBitRange).
//   cub_direct       cub::DeviceRadixSort::SortKeys / SortPairs on the natural type (uint32_t, float,
//                    uint64_t) over all bits, through a DoubleBuffer, temp storage allocated up front,
//                    int item count (the count type kernels/ passes, so both get CUB's 32-bit offsets).
//   gpusort_allbits  kernels::RadixSort over all bits: what the varying-bit range saves, for reference.
//
// Timing. CUDA events around the sort call and nothing else. Before every sort, outside the events:
//   - the sort's input buffer is restored by a device-to-device copy from one of 3 pristine inputs,
//     taken in turn (every method of an iteration sorts the same input);
//   - the L2 is flushed by writing a buffer twice its size, since the restoring copy would otherwise
//     leave the input's tail (or all of a small input) in L2.
// All iterations are queued before the host waits, so the events see device time, not launch latency
// or host-side argument checks. 3 warm-up iterations, then 15 timed ones; median and min are reported.
//
// Correctness, once per case and outside timing: each gpusort result (keys and payload) must equal CUB's
// result with CUB's keys mapped to ordered bits, CUB's must be ascending, and sum and xor of the keys
// must match the input's. Any failure prints FAIL and exits 1. No usable device: exit 2.
//
//   build/bin/kernel_bench [--json PATH] [--max-keys N] [--quick] [--runs N] [--warmup N]
//
// N takes a K, M or G suffix (binary): --max-keys 16M skips the cases above 2^24 keys.
#include <cub/device/device_radix_sort.cuh>
#include <cub/version.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench/cuda_bench_harness.cuh"
#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"

namespace {

namespace gk = gpusort::kernels;
using namespace gpusort::bench;  // the shared harness: Die, DeviceBuffer, EventPool, L2Flusher, ...

constexpr int kInputs = 3;  // pristine inputs the iterations rotate through

// ---------------------------------------------------------------------------------------------------
// Keys: the natural types CUB sorts, and the unsigned ordered bits kernels/ sorts.

enum class Distribution {
  kU32Random,  // all 32 bits random
  kU32Small,   // uniform in [0, 2^16): 16 varying bits, where AUTO's bit range pays
  kF32Random,  // uniform in [-1, 1) with 24-bit resolution, like torch.rand(n) * 2 - 1
  kU64Random,  // all 64 bits random
};

// The ordered-bits map of server/core/key_order.h (that header needs C++20; nvcc builds this as C++17).
__host__ __device__ inline std::uint32_t OrderedBits(std::uint32_t key) { return key; }
__host__ __device__ inline std::uint64_t OrderedBits(std::uint64_t key) { return key; }
__host__ __device__ inline std::uint32_t OrderedBits(float key) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &key, sizeof(bits));
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

template <typename T>
struct KeyTraits;
template <>
struct KeyTraits<std::uint32_t> {
  using Bits = std::uint32_t;
  static constexpr gk::KeyWidth kWidth = gk::KeyWidth::k32;
  static constexpr bool kOrderedIsNatural = true;
  static constexpr const char* kName = "u32";
};
template <>
struct KeyTraits<float> {
  using Bits = std::uint32_t;
  static constexpr gk::KeyWidth kWidth = gk::KeyWidth::k32;
  static constexpr bool kOrderedIsNatural = false;
  static constexpr const char* kName = "f32";
};
template <>
struct KeyTraits<std::uint64_t> {
  using Bits = std::uint64_t;
  static constexpr gk::KeyWidth kWidth = gk::KeyWidth::k64;
  static constexpr bool kOrderedIsNatural = true;
  static constexpr const char* kName = "u64";
};

// ---------------------------------------------------------------------------------------------------
// Inputs, generated on the device: splitmix64 of (index + seed) is fast, and reproducible run to run.

__host__ __device__ inline std::uint64_t SplitMix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__device__ inline void Draw(std::uint64_t h, Distribution d, std::uint32_t* out) {
  *out = d == Distribution::kU32Small ? static_cast<std::uint32_t>(h >> 48)
                                      : static_cast<std::uint32_t>(h >> 32);
}
__device__ inline void Draw(std::uint64_t h, Distribution, std::uint64_t* out) { *out = h; }
__device__ inline void Draw(std::uint64_t h, Distribution, float* out) {
  // m * 2^-23 - 1 for m < 2^24 is exact, never -0.0 (CUB would tie it with +0.0) and never NaN.
  *out = static_cast<float>(h >> 40) * 0x1p-23f - 1.0f;
}

template <typename T>
__global__ void GenerateKernel(T* out, std::size_t n, std::uint64_t seed, Distribution d) {
  const std::uint64_t base = SplitMix64(seed);
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    Draw(SplitMix64(base + i), d, &out[i]);
  }
}

template <typename T>
__global__ void ToOrderedBitsKernel(const T* in, typename KeyTraits<T>::Bits* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = OrderedBits(in[i]);
  }
}

unsigned GridFor(std::size_t n) {
  constexpr std::size_t kThreads = 256;
  return static_cast<unsigned>(std::clamp<std::size_t>((n + kThreads - 1) / kThreads, 1, 65535 * 16));
}

template <typename T>
void Generate(T* out, std::size_t n, std::uint64_t seed, Distribution d, cudaStream_t stream) {
  GenerateKernel<<<GridFor(n), 256, 0, stream>>>(out, n, seed, d);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void ToOrderedBits(const T* in, typename KeyTraits<T>::Bits* out, std::size_t n, cudaStream_t stream) {
  ToOrderedBitsKernel<<<GridFor(n), 256, 0, stream>>>(in, out, n);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
std::vector<T> CopyToHost(const void* device, std::size_t n, cudaStream_t stream) {
  std::vector<T> host(n);
  CUDA_CHECK(cudaMemcpyAsync(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// [lowest varying bit, highest varying bit + 1), as VaryingBitRange in the server's CUDA backend.
template <typename Bits>
std::pair<int, int> VaryingBitRange(const std::vector<Bits>& keys) {
  Bits or_bits = 0;
  Bits and_bits = ~Bits{0};
  for (Bits key : keys) {
    or_bits |= key;
    and_bits &= key;
  }
  const std::uint64_t varying = or_bits ^ and_bits;
  if (varying == 0) return {0, 0};
  int begin = 0;
  while (!((varying >> begin) & 1)) ++begin;
  int end = 64;
  while (!((varying >> (end - 1)) & 1)) --end;
  return {begin, end};
}

// ---------------------------------------------------------------------------------------------------
// Cases and results.

struct Case {
  std::string name;  // joins with torch_anchor.py's records, together with n
  Distribution distribution;
  bool with_values;  // uint32_t payload (values are random, so a wrong permutation shows)
  std::size_t n;
};

struct Options {
  std::string json_path;
  std::size_t max_keys = std::size_t{1} << 28;
  bool quick = false;
  int runs = 15;
  int warmup = 3;
};

struct Record {
  std::string case_name, dtype, method;
  std::size_t n = 0;
  double median_ms = 0, min_ms = 0;
  int begin_bit = 0, end_bit = 0;  // bits sorted
};

double GKeysPerSecond(std::size_t n, double ms) {
  return ms > 0 ? static_cast<double>(n) / (ms * 1e-3) / 1e9 : 0;
}


// ---------------------------------------------------------------------------------------------------
// One case: buffers, the three methods, verification and timing.

template <typename T>
class CaseRunner {
  using Bits = typename KeyTraits<T>::Bits;
  static constexpr int kKeyBits = sizeof(T) * 8;

 public:
  CaseRunner(const Case& c, const gk::Stream& stream, const Options& options, L2Flusher& flusher)
      : case_(c),
        n_(c.n),
        stream_(stream),
        native_(static_cast<cudaStream_t>(stream.native())),
        options_(options),
        flusher_(flusher) {}

  // Device bytes the case needs (temp included); sizes only, nothing allocated.
  std::size_t RequiredBytes() {
    QueryTempBytes();
    const std::size_t key_buffers = kInputs * (KeyTraits<T>::kOrderedIsNatural ? 1 : 2) + 2;
    const std::size_t value_buffers = case_.with_values ? kInputs + 2 : 0;
    return n_ * (key_buffers * sizeof(T) + value_buffers * sizeof(std::uint32_t)) + temp_bytes_;
  }

  std::vector<Record> Run() {
    Allocate();
    GenerateInputs();
    FindBitRanges();
    DefineMethods();
    Verify();
    return Time();
  }

 private:
  struct Method {
    const char* name;
    bool sorts_ordered_bits;  // kernels/ sorts ordered bits; CUB sorts the natural type
    int begin_bit, end_bit;   // for input 0 (AUTO's range may differ by input)
    // Queues the sort of the work buffers for pristine input `input`; returns the buffer (0 or 1)
    // that will hold the result.
    std::function<int(int input)> enqueue;
  };

  gk::RadixSortArgs GpusortArgs(int begin_bit, int end_bit) const {
    gk::RadixSortArgs args;
    args.key_width = KeyTraits<T>::kWidth;
    args.payload = case_.with_values ? gk::Payload::kU32 : gk::Payload::kNone;
    args.count = n_;
    args.keys[0] = keys_[0].get();
    args.keys[1] = keys_[1].get();
    args.values[0] = values_[0].get();
    args.values[1] = values_[1].get();
    args.begin_bit = begin_bit;
    args.end_bit = end_bit;
    return args;
  }

  // temp == nullptr: a size query into *temp_bytes. Returns CUB's selector (the buffer with the result).
  int CubSort(void* temp, std::size_t* temp_bytes) const {
    cub::DoubleBuffer<T> keys(keys_[0].as<T>(), keys_[1].as<T>());
    const int n = static_cast<int>(n_);
    cudaError_t error = cudaSuccess;
    if (case_.with_values) {
      cub::DoubleBuffer<std::uint32_t> values(values_[0].as<std::uint32_t>(),
                                              values_[1].as<std::uint32_t>());
      error = cub::DeviceRadixSort::SortPairs(temp, *temp_bytes, keys, values, n, 0, kKeyBits, native_);
      if (error == cudaSuccess && temp != nullptr && values.selector != keys.selector) {
        Die("CUB moved keys and values to different buffers");
      }
    } else {
      error = cub::DeviceRadixSort::SortKeys(temp, *temp_bytes, keys, n, 0, kKeyBits, native_);
    }
    CUDA_CHECK(error);
    if (temp != nullptr) CUDA_CHECK(cudaGetLastError());
    return keys.selector;
  }

  // One temp buffer serves all three methods: the larger of CUB's and kernels/' needs (the bit range
  // does not change either).
  void QueryTempBytes() {
    std::size_t cub_bytes = 0;
    CubSort(nullptr, &cub_bytes);
    std::size_t gpusort_bytes = 0;
    KERNELS_CHECK(gk::RadixSortTempBytes(GpusortArgs(0, kKeyBits), &gpusort_bytes));
    temp_bytes_ = std::max({cub_bytes, gpusort_bytes, std::size_t{1}});
  }

  void Allocate() {
    for (int r = 0; r < kInputs; ++r) {
      natural_.emplace_back(n_ * sizeof(T));
      if (!KeyTraits<T>::kOrderedIsNatural) ordered_.emplace_back(n_ * sizeof(Bits));
      if (case_.with_values) pristine_values_.emplace_back(n_ * sizeof(std::uint32_t));
    }
    for (int b = 0; b < 2; ++b) {
      keys_[b] = DeviceBuffer(n_ * sizeof(T));
      if (case_.with_values) values_[b] = DeviceBuffer(n_ * sizeof(std::uint32_t));
    }
    temp_ = DeviceBuffer(temp_bytes_);
  }

  const void* OrderedInput(int r) const {
    return KeyTraits<T>::kOrderedIsNatural ? natural_[r].get() : ordered_[r].get();
  }

  // Distinct seeds per input and per payload; the server would have mapped floats to ordered bits on
  // the host, here the map runs once on the device into the ordered copies.
  void GenerateInputs() {
    for (int r = 0; r < kInputs; ++r) {
      Generate(natural_[r].as<T>(), n_, 1000 + r, case_.distribution, native_);
      if (!KeyTraits<T>::kOrderedIsNatural) {
        ToOrderedBits(natural_[r].as<T>(), ordered_[r].as<Bits>(), n_, native_);
      }
      if (case_.with_values) {
        Generate(pristine_values_[r].as<std::uint32_t>(), n_, 2000 + r, Distribution::kU32Random,
                 native_);
      }
    }
    CUDA_CHECK(cudaStreamSynchronize(native_));
  }

  // AUTO's bit range for each input, from a host copy of its ordered bits (the server's staging scan).
  // Input 0's copy is kept for the checksum in Verify().
  void FindBitRanges() {
    for (int r = 0; r < kInputs; ++r) {
      std::vector<Bits> host = CopyToHost<Bits>(OrderedInput(r), n_, native_);
      bit_ranges_[r] = VaryingBitRange(host);
      if (r == 0) input0_ = std::move(host);
    }
  }

  void DefineMethods() {
    methods_.push_back({"gpusort_auto", true, bit_ranges_[0].first, bit_ranges_[0].second, [this](int r) {
                          return GpusortSort(bit_ranges_[r].first, bit_ranges_[r].second);
                        }});
    methods_.push_back({"cub_direct", false, 0, kKeyBits, [this](int) {
                          std::size_t bytes = temp_bytes_;
                          return CubSort(temp_.get(), &bytes);
                        }});
    methods_.push_back({"gpusort_allbits", true, 0, kKeyBits,
                        [this](int) { return GpusortSort(0, kKeyBits); }});
  }

  int GpusortSort(int begin_bit, int end_bit) const {
    int result = 0;
    KERNELS_CHECK(gk::RadixSort(GpusortArgs(begin_bit, end_bit), temp_.get(), temp_bytes_, stream_, &result));
    return result;
  }

  // Restores the work buffers' input side (keys[0], values[0]) from pristine input r.
  void EnqueueReset(const Method& method, int r) const {
    const void* keys = method.sorts_ordered_bits ? OrderedInput(r) : natural_[r].get();
    CUDA_CHECK(cudaMemcpyAsync(keys_[0].get(), keys, n_ * sizeof(T), cudaMemcpyDeviceToDevice, native_));
    if (case_.with_values) {
      CUDA_CHECK(cudaMemcpyAsync(values_[0].get(), pristine_values_[r].get(), n_ * sizeof(std::uint32_t),
                                 cudaMemcpyDeviceToDevice, native_));
    }
  }

  // Sorts input 0 with `method` and returns its keys as ordered bits, and its payload.
  std::pair<std::vector<Bits>, std::vector<std::uint32_t>> SortOnce(const Method& method) {
    EnqueueReset(method, 0);
    const int result = method.enqueue(0);
    std::vector<Bits> keys;
    if (method.sorts_ordered_bits) {
      keys = CopyToHost<Bits>(keys_[result].get(), n_, native_);
    } else {
      const std::vector<T> natural = CopyToHost<T>(keys_[result].get(), n_, native_);
      keys.resize(n_);
      for (std::size_t i = 0; i < n_; ++i) keys[i] = OrderedBits(natural[i]);
    }
    std::vector<std::uint32_t> values;
    if (case_.with_values) values = CopyToHost<std::uint32_t>(values_[result].get(), n_, native_);
    return {std::move(keys), std::move(values)};
  }

  [[noreturn]] void Fail(const std::string& what) const {
    std::printf("FAIL %s n=%zu: %s\n", case_.name.c_str(), n_, what.c_str());
    std::fflush(stdout);
    std::exit(1);
  }

  void Verify() {
    const Method& cub = methods_[1];
    const auto [want_keys, want_values] = SortOnce(cub);
    if (!std::is_sorted(want_keys.begin(), want_keys.end())) Fail("CUB's result is not ascending");
    // Sum and xor of the keys: CUB's result must be a permutation of the input (cheap, not exact).
    auto sum_xor = [](const std::vector<Bits>& v) {
      std::pair<std::uint64_t, std::uint64_t> s{0, 0};
      for (Bits b : v) s.first += b, s.second ^= b;
      return s;
    };
    if (sum_xor(want_keys) != sum_xor(input0_)) Fail("CUB's keys are not a permutation of the input");
    for (const Method& method : methods_) {
      if (&method == &cub) continue;
      const auto [keys, values] = SortOnce(method);
      const auto mismatch = std::mismatch(keys.begin(), keys.end(), want_keys.begin());
      if (mismatch.first != keys.end()) {
        Fail(std::string(method.name) + " keys differ from CUB's at index " +
             std::to_string(mismatch.first - keys.begin()));
      }
      if (values != want_values) Fail(std::string(method.name) + " payload differs from CUB's");
    }
  }

  std::vector<Record> Time() {
    const int iterations = options_.warmup + options_.runs;
    const std::size_t m = methods_.size();
    EventPool events(2 * m * iterations);
    auto start = [&](int it, std::size_t k) { return events[2 * (it * m + k)]; };
    auto stop = [&](int it, std::size_t k) { return events[2 * (it * m + k) + 1]; };
    // Methods interleave within an iteration, so clock and thermal drift touches all of them alike.
    for (int it = 0; it < iterations; ++it) {
      const int r = it % kInputs;
      for (std::size_t k = 0; k < m; ++k) {
        EnqueueReset(methods_[k], r);
        flusher_.Enqueue(native_);
        CUDA_CHECK(cudaEventRecord(start(it, k), native_));
        methods_[k].enqueue(r);
        CUDA_CHECK(cudaEventRecord(stop(it, k), native_));
      }
    }
    CUDA_CHECK(cudaStreamSynchronize(native_));

    std::vector<Record> records;
    for (std::size_t k = 0; k < m; ++k) {
      std::vector<double> ms;
      for (int it = options_.warmup; it < iterations; ++it) {
        float elapsed = 0;
        CUDA_CHECK(cudaEventElapsedTime(&elapsed, start(it, k), stop(it, k)));
        ms.push_back(elapsed);
      }
      Record record;
      record.case_name = case_.name;
      record.dtype = KeyTraits<T>::kName;
      if (case_.with_values) record.dtype += "+u32";
      record.method = methods_[k].name;
      record.n = n_;
      record.median_ms = Median(ms);
      record.min_ms = *std::min_element(ms.begin(), ms.end());
      record.begin_bit = methods_[k].begin_bit;
      record.end_bit = methods_[k].end_bit;
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
  std::vector<DeviceBuffer> natural_, ordered_, pristine_values_;  // kInputs each (as needed)
  DeviceBuffer keys_[2], values_[2], temp_;                          // what the sorts work in
  std::pair<int, int> bit_ranges_[kInputs];
  std::vector<Bits> input0_;
  std::vector<Method> methods_;
};

// ---------------------------------------------------------------------------------------------------
// The case list, the command line and the output.

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  const std::size_t big[] = {std::size_t{1} << 10, std::size_t{1} << 16, std::size_t{1} << 20,
                             std::size_t{1} << 24, std::size_t{1} << 26, std::size_t{1} << 28};
  for (std::size_t n : big) cases.push_back({"u32_random", Distribution::kU32Random, false, n});
  for (std::size_t n : big) cases.push_back({"f32_random", Distribution::kF32Random, false, n});
  const std::size_t medium[] = {std::size_t{1} << 20, std::size_t{1} << 24, std::size_t{1} << 27};
  for (std::size_t n : medium) cases.push_back({"u64_random", Distribution::kU64Random, false, n});
  for (std::size_t n : medium) cases.push_back({"kv_u32_u32", Distribution::kU32Random, true, n});
  for (std::size_t n : {std::size_t{1} << 24, std::size_t{1} << 28}) {
    cases.push_back({"u32_small_range", Distribution::kU32Small, false, n});
  }
  return cases;
}

bool Selected(const Case& c, const Options& options) {
  if (c.n > options.max_keys) return false;
  return !options.quick || c.n == (std::size_t{1} << 20) || c.n == (std::size_t{1} << 24);
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
    else if (arg == "--runs") options.runs = std::max<int>(1, static_cast<int>(ParseCount(value())));
    else if (arg == "--warmup") options.warmup = static_cast<int>(ParseCount(value()));
    else if (arg == "--help" || arg == "-h") {
      std::printf("usage: kernel_bench [--json PATH] [--max-keys N[K|M|G]] [--quick] [--runs N] "
                  "[--warmup N]\n");
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
    if (static_cast<unsigned char>(c) < 0x20) continue;  // device names carry no control characters
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
  std::fprintf(f, "  \"l2_flush_bytes\": %zu,\n  \"records\": [\n", device.l2_flush_bytes);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    const double gkeys = GKeysPerSecond(r.n, r.median_ms);
    std::fprintf(f,
                 "    {\"case\": %s, \"dtype\": %s, \"n\": %zu, \"method\": %s, \"median_ms\": %.6f, "
                 "\"min_ms\": %.6f, \"gkeys_per_s\": %.4f, \"begin_bit\": %d, \"end_bit\": %d}%s\n",
                 JsonString(r.case_name).c_str(), JsonString(r.dtype).c_str(), r.n,
                 JsonString(r.method).c_str(), r.median_ms, r.min_ms, gkeys, r.begin_bit, r.end_bit,
                 i + 1 < records.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  if (std::fclose(f) != 0) Die("error writing " + path);
}

void PrintHeader() {
  std::printf("%-16s %-8s %10s %11s %11s %11s %9s %8s %10s\n", "case", "dtype", "n", "auto_ms", "cub_ms",
              "allbits_ms", "auto/cub", "bits", "auto_Gk/s");
}

// One line per case from its three records (auto, cub, allbits, in that order).
void PrintCase(const std::vector<Record>& r) {
  const double gkeys = GKeysPerSecond(r[0].n, r[0].median_ms);
  const std::string bits = "[" + std::to_string(r[0].begin_bit) + "," + std::to_string(r[0].end_bit) + ")";
  std::printf("%-16s %-8s %10zu %11.4f %11.4f %11.4f %9.3f %8s %10.2f\n", r[0].case_name.c_str(),
              r[0].dtype.c_str(), r[0].n, r[0].median_ms, r[1].median_ms, r[2].median_ms,
              r[0].median_ms / r[1].median_ms, bits.c_str(), gkeys);
  std::fflush(stdout);
}

template <typename T>
bool RunCase(const Case& c, const gk::Stream& stream, const Options& options, L2Flusher& flusher,
             std::vector<Record>* records) {
  CaseRunner<T> runner(c, stream, options, flusher);
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t need = runner.RequiredBytes();
  constexpr std::size_t kMargin = std::size_t{256} << 20;  // CUB, the pool and the driver's own needs
  if (need + kMargin > free_bytes) {
    std::printf("SKIP %s n=%zu: needs %zu MiB, %zu MiB free\n", c.name.c_str(), c.n, need >> 20,
                free_bytes >> 20);
    return false;
  }
  std::vector<Record> mine = runner.Run();
  PrintCase(mine);
  records->insert(records->end(), mine.begin(), mine.end());
  return true;
}

DeviceInfo OpenDevice() {
  std::string why_none;
  if (gk::CountDevices(&why_none) == 0) Die("no usable CUDA device: " + why_none, 2);
  int count = 0;  // this binary's own calls, checked too
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
  std::printf("median of %d runs after %d warm-up, %d rotating inputs, L2 flushed (%zu MiB) before each\n",
              options.runs, options.warmup, kInputs, device.l2_flush_bytes >> 20);
  PrintHeader();

  std::vector<Record> records;
  for (const Case& c : AllCases()) {
    if (!Selected(c, options)) continue;
    switch (c.distribution) {
      case Distribution::kU32Random:
      case Distribution::kU32Small:
        RunCase<std::uint32_t>(c, stream, options, flusher, &records);
        break;
      case Distribution::kF32Random:
        RunCase<float>(c, stream, options, flusher, &records);
        break;
      case Distribution::kU64Random:
        RunCase<std::uint64_t>(c, stream, options, flusher, &records);
        break;
    }
  }
  if (!options.json_path.empty()) {
    WriteJson(options.json_path, device, options, records);
    std::printf("wrote %s (%zu records)\n", options.json_path.c_str(), records.size());
  }
  return 0;
}
