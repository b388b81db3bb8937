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
// tests/cpu/key_order_test.cc (EngineKey.*) checks the bias over every 8- and 16-bit pattern and the
// 32- and 64-bit boundary patterns.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "server/core/key_order.h"
#include "server/core/narrow_float.h"

namespace gpusort::cpu {

// The type whose engine sorts keys of type T: uintN for intN, float16 for bfloat16, else T itself.
// (make_unsigned is named, not instantiated, for the other types: only the chosen branch's ::type is.)
template <typename T>
using EngineKeyType = typename std::conditional_t<
    std::is_integral_v<T> && std::is_signed_v<T>, std::make_unsigned<T>,
    std::type_identity<std::conditional_t<std::is_same_v<T, BFloat16>, Float16, T>>>::type;

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
