// The one key order every backend uses, as a map from a key to an unsigned integer whose natural
// order is the key order. Integers: flip the sign bit. Floats: IEEE 754 totalOrder
// (-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN, NaNs by payload), which is the classic
// radix-sort transform: negative floats have all bits flipped, others only the sign bit. Two keys are
// equal in this order exactly when their bit patterns are equal.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

namespace gpusort {

template <typename T>
using OrderedBitsType = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

template <typename T>
constexpr OrderedBitsType<T> ToOrderedBits(T key) {
  using U = OrderedBitsType<T>;
  constexpr U kSign = U{1} << (sizeof(U) * 8 - 1);
  const U bits = std::bit_cast<U>(key);
  if constexpr (std::is_floating_point_v<T>) {
    return (bits & kSign) ? static_cast<U>(~bits) : static_cast<U>(bits | kSign);
  } else if constexpr (std::is_signed_v<T>) {
    return bits ^ kSign;
  } else {
    return bits;
  }
}

template <typename T>
constexpr T FromOrderedBits(OrderedBitsType<T> ordered) {
  using U = OrderedBitsType<T>;
  constexpr U kSign = U{1} << (sizeof(U) * 8 - 1);
  if constexpr (std::is_floating_point_v<T>) {
    return std::bit_cast<T>((ordered & kSign) ? static_cast<U>(ordered ^ kSign)
                                              : static_cast<U>(~ordered));
  } else if constexpr (std::is_signed_v<T>) {
    return std::bit_cast<T>(static_cast<U>(ordered ^ kSign));
  } else {
    return ordered;
  }
}

// The bits that sort ascending when the keys sort in `descending` order or not: the ordered bits,
// complemented for a descending sort (the GPU batch paths build their rows and composite keys of them).
template <typename T>
constexpr OrderedBitsType<T> ToSortBits(T key, bool descending) {
  const OrderedBitsType<T> bits = ToOrderedBits(key);
  return descending ? static_cast<OrderedBitsType<T>>(~bits) : bits;
}

template <typename T>
constexpr T FromSortBits(OrderedBitsType<T> bits, bool descending) {
  return FromOrderedBits<T>(descending ? static_cast<OrderedBitsType<T>>(~bits) : bits);
}

// Strict weak orders over keys in the service's key order (total for floats, see above).
template <typename T>
struct KeyLess {
  constexpr bool operator()(T a, T b) const { return ToOrderedBits(a) < ToOrderedBits(b); }
};
template <typename T>
struct KeyGreater {
  constexpr bool operator()(T a, T b) const { return ToOrderedBits(a) > ToOrderedBits(b); }
};

}  // namespace gpusort
