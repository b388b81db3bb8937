// What the CUDA benchmarks (kernel_bench, comparison_bench, top_k_bench) share: dying with a message,
// checked CUDA and kernels/ calls, device buffers and events freed on scope exit, the L2 flush before
// each timed call, the median, and counts with K/M/G suffixes. Each benchmark is one translation unit
// that includes this once.
#pragma once

#include <errno.h>  // program_invocation_short_name (glibc)

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "gpusort/kernels/status.h"

namespace gpusort::bench {

// Prints "<program>: message" and exits: 1 for a failure, 2 for a usage error or no usable device.
[[noreturn]] inline void Die(const std::string& message, int code = 1) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, message.c_str());
  std::exit(code);
}

inline void CheckCuda(cudaError_t error, const char* call, int line) {
  if (error == cudaSuccess) return;
  Die(std::string(call) + " (line " + std::to_string(line) + "): " + cudaGetErrorName(error) + ": " +
      cudaGetErrorString(error));
}

inline void CheckKernels(const gpusort::kernels::Status& status, const char* call, int line) {
  if (status.ok()) return;
  Die(std::string(call) + " (line " + std::to_string(line) + "): " + status.message());
}

}  // namespace gpusort::bench

#define CUDA_CHECK(call) ::gpusort::bench::CheckCuda((call), #call, __LINE__)
#define KERNELS_CHECK(call) ::gpusort::bench::CheckKernels((call), #call, __LINE__)

namespace gpusort::bench {

// ---------------------------------------------------------------------------------------------------
// Device memory and events, freed on scope exit so each case returns its memory before the next.

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) CUDA_CHECK(cudaMalloc(&data_, bytes));
  }
  ~DeviceBuffer() {
    if (data_) CUDA_CHECK(cudaFree(data_));
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return data_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

class EventPool {
 public:
  explicit EventPool(std::size_t count) : events_(count, nullptr) {
    // Default flags (timing on, spin on sync): the host waits once per case, so spinning costs nothing.
    for (cudaEvent_t& event : events_) CUDA_CHECK(cudaEventCreate(&event));
  }
  ~EventPool() {
    for (cudaEvent_t event : events_) CUDA_CHECK(cudaEventDestroy(event));
  }
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;
  cudaEvent_t operator[](std::size_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
};

// Evicts everything from L2 by overwriting a buffer twice the L2's size (the approach nvbench takes).
class L2Flusher {
 public:
  L2Flusher() {
    int device = 0;
    int l2_bytes = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
    buffer_ = DeviceBuffer(std::max<std::size_t>(2 * static_cast<std::size_t>(l2_bytes), 1 << 20));
  }
  void Enqueue(cudaStream_t stream) {
    CUDA_CHECK(cudaMemsetAsync(buffer_.get(), ++pass_ & 0xFF, buffer_.bytes(), stream));
  }
  std::size_t bytes() const { return buffer_.bytes(); }

 private:
  DeviceBuffer buffer_;
  int pass_ = 0;
};

// ---------------------------------------------------------------------------------------------------
// Timing and arguments.

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// "16M" -> 16 << 20: a count with an optional binary K, M or G suffix; anything else is a usage error.
inline std::size_t ParseCount(const std::string& text) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  std::size_t shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10, ++end;
  else if (*end == 'M' || *end == 'm') shift = 20, ++end;
  else if (*end == 'G' || *end == 'g') shift = 30, ++end;
  if (end == text.c_str() || *end != '\0') Die("not a count: " + text, 2);
  return static_cast<std::size_t>(value) << shift;
}

}  // namespace gpusort::bench
