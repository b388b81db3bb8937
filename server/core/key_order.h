// The one key order every backend uses, for typed keys on the host: a map from a key to an unsigned
// integer whose natural order is the key order (IEEE 754 totalOrder for floats, NaNs by payload; two keys
// are equal exactly when their bits are). The map itself is defined once, for the host and the device,
// in kernels/include/gpusort/kernels/key_order.h; this header only gives it C++ key types.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "gpusort/kernels/key_order.h"
#include "server/core/narrow_float.h"

namespace gpusort {

// The unsigned integer of T's width.
template <typename T>
using OrderedBitsType = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

// How T's bits are read by the shared definition.
template <typename T>
constexpr kernels::KeyKind KeyKindOf() {
  if constexpr (kIsFloatKey<T>) {
    return kernels::KeyKind::kFloat;
  } else if constexpr (std::is_signed_v<T>) {
    return kernels::KeyKind::kSigned;
  } else {
    return kernels::KeyKind::kUnsigned;
  }
}

template <typename T>
constexpr OrderedBitsType<T> ToOrderedBits(T key) {
  using U = OrderedBitsType<T>;
  return kernels::OrderedBits<U, KeyKindOf<T>()>(std::bit_cast<U>(key));
}

template <typename T>
constexpr T FromOrderedBits(OrderedBitsType<T> ordered) {
  using U = OrderedBitsType<T>;
  return std::bit_cast<T>(kernels::KeyBitsFromOrdered<U, KeyKindOf<T>()>(ordered));
}

// The bits that sort ascending when the keys sort in `descending` order or not: the ordered bits,
// complemented for a descending sort (the CPU merge of sorted runs compares them).
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
