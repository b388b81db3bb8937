// What the GPU suites share: one CUDA backend and one CPU backend per test binary (creating a CUDA
// backend sets up streams and pinned buffers), the skip when no GPU is usable, and raw key bytes.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "server/backend/cpu/cpu_backend.h"
#include "server/backend/cuda_backend.h"

namespace gpusort::testing {

inline Backend* Cuda() {
  static std::unique_ptr<Backend> backend = [] {
    auto made = MakeCudaBackend({});
    return made.ok() ? std::move(*made) : nullptr;
  }();
  return backend.get();
}

inline Backend* Cpu() {
  static std::unique_ptr<Backend> backend = MakeCpuBackend({});
  return backend.get();
}

#define SKIP_WITHOUT_GPU()                                              \
  do {                                                                  \
    if (::gpusort::testing::Cuda() == nullptr) GTEST_SKIP() << "no usable GPU"; \
  } while (0)

template <typename T>
std::vector<std::byte> Bytes(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace gpusort::testing
