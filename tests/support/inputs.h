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

// The values that trip comparisons for T: extremes, and for floats NaNs (both signs, two payloads),
// infinities, signed zeros, denormals.
template <typename T>
std::vector<T> SpecialValues() {
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

// Random keys spread over the whole bit range of T (floats: every bit pattern, NaNs included).
template <typename T>
T RandomKey(std::mt19937_64& rng) {
  using U = OrderedBitsType<T>;
  return std::bit_cast<T>(static_cast<U>(rng()));
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
    case Pattern::kOrganPipe:
      for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(i % 1000003) - T(n / 2 > 1000 ? 1000 : 0);
      std::sort(v.begin(), v.end(), KeyLess<T>{});
      if (pattern == Pattern::kReversed) std::reverse(v.begin(), v.end());
      if (pattern == Pattern::kOrganPipe) std::reverse(v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
      break;
    case Pattern::kAllEqual:
      std::fill(v.begin(), v.end(), static_cast<T>(42));
      break;
    case Pattern::kFewDistinct: {
      const T choices[] = {T(3), T(1), T(4), T(1), T(5)};
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
