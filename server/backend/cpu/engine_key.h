// The key types the CPU engine is compiled for: 7, not the service's 12.
//
// The engine sorts and selects by ToOrderedBits(key) ^ mask. Where two key types of one width have
// ordered bits that differ by a constant XOR for every bit pattern, the engine of one serves the other
// with that constant folded into the mask:
//   intN    = uintN's engine, bias = the sign bit (the signed map is bits ^ sign, the unsigned one bits);
//   bfloat16 = float16's engine, bias = 0 (both maps are the same sign-magnitude flip on 16 bits).
// Keys are read and written as bits of the same width, so the answer is bit for bit the same.
// Why: the radix engine's instantiations were half of every build's compile time (each minutes under
// the sanitizers; the CI run went past its 90 minutes once 8- and 16-bit keys came, 2026-11-25).
// tests/cpu/engine_key_test.cc checks the bias over every 8- and 16-bit pattern and the 32- and 64-bit
// boundary patterns.
#pragma once

#include <bit>
#include <cstdint>

#include "server/core/key_order.h"
#include "server/core/narrow_float.h"

namespace gpusort::cpu {

template <typename T>
struct EngineKey {
  using type = T;
};
template <>
struct EngineKey<int8_t> {
  using type = uint8_t;
};
template <>
struct EngineKey<int16_t> {
  using type = uint16_t;
};
template <>
struct EngineKey<int32_t> {
  using type = uint32_t;
};
template <>
struct EngineKey<int64_t> {
  using type = uint64_t;
};
template <>
struct EngineKey<BFloat16> {
  using type = Float16;
};

// The type whose engine sorts keys of type T.
template <typename T>
using EngineKeyType = typename EngineKey<T>::type;

// ToOrderedBits(T's bits) == ToOrderedBits(EngineKeyType<T>'s same bits) ^ EngineBias<T>().
template <typename T>
constexpr OrderedBitsType<T> EngineBias() {
  using E = EngineKeyType<T>;
  using U = OrderedBitsType<T>;
  static_assert(sizeof(E) == sizeof(T));
  return static_cast<U>(ToOrderedBits(std::bit_cast<T>(U{0})) ^ ToOrderedBits(std::bit_cast<E>(U{0})));
}

// The mask that makes the first-ranked key the smallest: all ones for a descending order (largest
// first), none for ascending.
template <typename U>
constexpr U OrderMask(bool descending) {
  return descending ? static_cast<U>(~U{0}) : U{0};
}

}  // namespace gpusort::cpu
