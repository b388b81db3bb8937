// Adversarial inputs for every dtype: the patterns that break sorts (sorted, reversed, all equal, few
// distinct, organ pipe) and the values that break comparisons (NaN of both signs, +-0.0, +-inf,
// denormals, the extremes of each type).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "server/core/key_order.h"

namespace gpusort::testing {

enum class Pattern { kRandom, kSorted, kReversed, kAllEqual, kFewDistinct, kOrganPipe, kSpecials };
inline constexpr Pattern kAllPatterns[] = {Pattern::kRandom,    Pattern::kSorted,
                                           Pattern::kReversed,  Pattern::kAllEqual,
                                           Pattern::kFewDistinct, Pattern::kOrganPipe,
                                           Pattern::kSpecials};

inline std::string PatternName(Pattern p) {
  switch (p) {
    case Pattern::kRandom: return "random";
    case Pattern::kSorted: return "sorted";
    case Pattern::kReversed: return "reversed";
    case Pattern::kAllEqual: return "all_equal";
    case Pattern::kFewDistinct: return "few_distinct";
    case Pattern::kOrganPipe: return "organ_pipe";
    case Pattern::kSpecials: return "specials";
  }
  return "unknown";
}

// Float16 and BFloat16 keys from their bits, for the patterns below (the server only moves and orders
// these keys, so the tests name them by bits too).
template <typename T>
constexpr bool kIsHalfKey = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// A key of value v, for the small integers the patterns use: exact in every dtype for |v| <= 256, and
// for float16 up to 2048 (larger ones are truncated to a valid key, which is all a pattern needs).
template <typename T>
T KeyFromSmallInt(int64_t v) {
  if constexpr (kIsHalfKey<T>) {
    const std::uint32_t f = std::bit_cast<std::uint32_t>(static_cast<float>(v));
    if constexpr (std::is_same_v<T, BFloat16>) {
      return T{static_cast<std::uint16_t>(f >> 16)};
    } else {
      if (v == 0) return T{0};
      const std::uint32_t sign = (f >> 16) & 0x8000u;
      const int exponent = static_cast<int>((f >> 23) & 0xFF) - 127 + 15;
      if (exponent >= 31) return T{static_cast<std::uint16_t>(sign | 0x7C00u)};  // beyond float16: inf
      return T{static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exponent) << 10) | ((f >> 13) & 0x3FFu))};
    }
  } else {
    return static_cast<T>(v);
  }
}

// The values that trip comparisons for T: extremes, and for floats NaNs (both signs, two payloads),
// infinities, signed zeros, denormals.
template <typename T>
std::vector<T> SpecialValues() {
  if constexpr (std::is_same_v<T, Float16>) {
    // lowest, max, min normal, 0, 1, -1, qNaN, -qNaN, NaNs with payload 1 (quiet and signalling, both
    // signs), +-inf, -0.0, +-denorm_min, -min, +-0.5, the largest subnormal.
    return {T{0xFBFF}, T{0x7BFF}, T{0x0400}, T{0x0000}, T{0x3C00}, T{0xBC00}, T{0x7E00}, T{0xFE00},
            T{0x7E01}, T{0xFE01}, T{0x7C01}, T{0xFC01}, T{0x7C00}, T{0xFC00}, T{0x8000}, T{0x0001},
            T{0x8001}, T{0x8400}, T{0x3800}, T{0xB800}, T{0x03FF}};
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return {T{0xFF7F}, T{0x7F7F}, T{0x0080}, T{0x0000}, T{0x3F80}, T{0xBF80}, T{0x7FC0}, T{0xFFC0},
            T{0x7FC1}, T{0xFFC1}, T{0x7F81}, T{0xFF81}, T{0x7F80}, T{0xFF80}, T{0x8000}, T{0x0001},
            T{0x8001}, T{0x8080}, T{0x3F00}, T{0xBF00}, T{0x007F}};
  } else {
    using L = std::numeric_limits<T>;
    std::vector<T> v = {L::lowest(), L::max(), L::min(), T(0), T(1)};
    if constexpr (std::is_signed_v<T>) v.push_back(T(-1));
    if constexpr (std::is_floating_point_v<T>) {
      using U = OrderedBitsType<T>;
      const T qnan = L::quiet_NaN();
      U payload_nan_bits = std::bit_cast<U>(qnan) | U{1};
      const T payload_nan = std::bit_cast<T>(payload_nan_bits);
      v.insert(v.end(), {qnan, -qnan, payload_nan, -payload_nan, L::infinity(), -L::infinity(),
                         T(-0.0), L::denorm_min(), -L::denorm_min(), -L::min(), T(0.5), T(-0.5)});
    }
    return v;
  }
}

// Random keys spread over the whole bit range of T (floats: every bit pattern, NaNs included).
template <typename T>
T RandomKey(std::mt19937_64& rng) {
  using U = OrderedBitsType<T>;
  return std::bit_cast<T>(static_cast<U>(rng()));
}

// How many distinct values the ordered patterns cycle through: a million for the wide types, and for
// the narrow ones a range their keys hold exactly (so that "sorted" is sorted, not all one value).
template <typename T>
constexpr int64_t PatternSpan() {
  if constexpr (sizeof(T) >= 4) return 1000003;
  if constexpr (std::is_same_v<T, Float16>) return 4000;  // -2000 .. 1999: exact integers in float16
  if constexpr (std::is_same_v<T, BFloat16>) return 500;  // -250 .. 249: exact in bfloat16
  return sizeof(T) == 2 ? 65536 : 256;
}

template <typename T>
std::vector<T> MakeInput(Pattern pattern, std::size_t n, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  switch (pattern) {
    case Pattern::kRandom:
      for (auto& x : v) x = RandomKey<T>(rng);
      break;
    case Pattern::kSorted:
    case Pattern::kReversed:
    case Pattern::kOrganPipe: {
      constexpr int64_t kSpan = PatternSpan<T>();
      // Wide types keep the original shift (1000 below zero for long inputs); narrow ones centre the span.
      const int64_t shift = sizeof(T) >= 4 ? (n / 2 > 1000 ? 1000 : 0) : kSpan / 2;
      for (std::size_t i = 0; i < n; ++i) v[i] = KeyFromSmallInt<T>(static_cast<int64_t>(i) % kSpan - shift);
      std::sort(v.begin(), v.end(), KeyLess<T>{});
      if (pattern == Pattern::kReversed) std::reverse(v.begin(), v.end());
      if (pattern == Pattern::kOrganPipe) std::reverse(v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
      break;
    }
    case Pattern::kAllEqual:
      std::fill(v.begin(), v.end(), KeyFromSmallInt<T>(42));
      break;
    case Pattern::kFewDistinct: {
      const T choices[] = {KeyFromSmallInt<T>(3), KeyFromSmallInt<T>(1), KeyFromSmallInt<T>(4),
                           KeyFromSmallInt<T>(1), KeyFromSmallInt<T>(5)};
      for (auto& x : v) x = choices[rng() % 5];
      break;
    }
    case Pattern::kSpecials: {
      const std::vector<T> specials = SpecialValues<T>();
      for (auto& x : v) x = (rng() % 2) ? specials[rng() % specials.size()] : RandomKey<T>(rng);
      break;
    }
  }
  return v;
}

// Sizes around the edges: empty, one, powers of two and their neighbours.
inline std::vector<std::size_t> EdgeSizes() {
  return {0, 1, 2, 3, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4095, 4097, 65535, 65537};
}

// Opaque payload bytes (random, so that a value moved to the wrong place shows).
inline std::vector<std::byte> MakeValueBytes(std::size_t bytes, uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(bytes);
  for (std::size_t i = 0; i < bytes; i += 8) {
    const uint64_t r = rng();
    for (std::size_t j = 0; j < 8 && i + j < bytes; ++j) v[i + j] = static_cast<std::byte>(r >> (8 * j));
  }
  return v;
}

}  // namespace gpusort::testing
