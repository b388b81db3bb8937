// Element access to byte buffers that may not be aligned for the element type (request bytes come
// from protobuf strings at any offset). memcpy of a constant size compiles to a plain load or store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gpusort::cpu {

template <typename T>
inline T LoadAt(const std::byte* base, std::size_t i) {
  T v;
  std::memcpy(&v, base + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
inline void StoreAt(std::byte* base, std::size_t i, T v) {
  std::memcpy(base + i * sizeof(T), &v, sizeof(T));
}

template <typename T>
inline bool IsAlignedFor(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0;
}

}  // namespace gpusort::cpu
