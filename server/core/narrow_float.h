// Host-side key types for the 16-bit float dtypes. The server never does arithmetic on keys: it only
// moves their bits and orders them (key_order.h), so a float16 or bfloat16 key is its 16 bits, held in
// a type of its own so that templates over key types (VisitDType) tell the dtypes apart and read the
// bits as a float (KeyKindOf). No CUDA type: the host code builds without CUDA.
#pragma once

#include <cstdint>
#include <type_traits>

namespace gpusort {

struct Float16 {  // IEEE 754 binary16: sign, 5 exponent bits, 10 mantissa bits
  std::uint16_t bits;
  friend constexpr bool operator==(Float16, Float16) = default;  // bitwise, like every key compare
};
struct BFloat16 {  // the upper half of an IEEE 754 binary32: sign, 8 exponent bits, 7 mantissa bits
  std::uint16_t bits;
  friend constexpr bool operator==(BFloat16, BFloat16) = default;
};
static_assert(sizeof(Float16) == 2 && std::is_trivially_copyable_v<Float16>);
static_assert(sizeof(BFloat16) == 2 && std::is_trivially_copyable_v<BFloat16>);

// Key types whose bits are read as an IEEE 754 float (sign, exponent, mantissa).
template <typename T>
inline constexpr bool kIsFloatKey =
    std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

}  // namespace gpusort
