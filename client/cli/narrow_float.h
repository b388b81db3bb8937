// The CLI's 16-bit float keys (float16, bfloat16): a type of their own holding the bits, so that
// VisitDType gives every dtype a distinct C++ type, and the conversions to and from float that reading,
// writing and generating keys need. The CLI never computes with these keys: it converts, moves and
// orders bits, so no arithmetic is defined. (The server has its own, gpusort::Float16 in
// server/core/narrow_float.h; the CLI does not depend on server/.)
//
// Conversions to the narrow formats round to nearest, ties to even; a value past the largest finite
// one becomes infinity; subnormals and -0.0 are kept. A NaN stays a NaN of the same sign, keeping the
// top bits of its payload (numpy's float32 -> float16 rule: a payload that would vanish becomes 1).
// Conversions back to float are exact, payload included.
#pragma once

#include <cstdint>
#include <type_traits>

namespace gpusort::cli {

struct Float16 {  // IEEE 754 binary16: sign, 5 exponent bits, 10 mantissa bits (numpy float16)
  std::uint16_t bits = 0;
  friend constexpr bool operator==(Float16, Float16) = default;  // bitwise, like every key compare
};
struct BFloat16 {  // the upper half of an IEEE 754 binary32: sign, 8 exponent bits, 7 mantissa bits
  std::uint16_t bits = 0;
  friend constexpr bool operator==(BFloat16, BFloat16) = default;
};
static_assert(sizeof(Float16) == 2 && std::is_trivially_copyable_v<Float16>);
static_assert(sizeof(BFloat16) == 2 && std::is_trivially_copyable_v<BFloat16>);

template <typename T>
inline constexpr bool kIsNarrowFloat = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
// Key types whose bits are an IEEE 754 float, ordered by totalOrder (sort.proto).
template <typename T>
inline constexpr bool kIsFloatKey = std::is_floating_point_v<T> || kIsNarrowFloat<T>;

// A binary interchange format narrower than float: its field widths.
struct NarrowFormat {
  int exponent_bits;
  int mantissa_bits;
};
inline constexpr NarrowFormat kFloat16Format{5, 10};
inline constexpr NarrowFormat kBFloat16Format{8, 7};
template <typename T>
constexpr NarrowFormat FormatOf() {
  static_assert(kIsNarrowFloat<T>);
  return std::is_same_v<T, Float16> ? kFloat16Format : kBFloat16Format;
}

// The magnitude bits (no sign) of the finite `magnitude` >= 0 rounded to `format`, to nearest, ties to
// even; infinity's bits when it rounds past the largest finite value. `beyond` is for a magnitude that
// was itself rounded from an exact value (a decimal read from text): the sign of exact - magnitude. It
// matters only when `magnitude` is exactly halfway between two narrow values, where it decides the tie
// that the exact value does not have.
std::uint16_t RoundMagnitude(double magnitude, NarrowFormat format, int beyond = 0);
// Whether the finite `magnitude` >= 0 is exactly halfway between two neighbours in `format`.
bool IsHalfway(double magnitude, NarrowFormat format);

Float16 ToFloat16(float x);
Float16 ToFloat16(double x);  // rounded once: never through float, whose rounding could make a tie
BFloat16 ToBFloat16(float x);
BFloat16 ToBFloat16(double x);
float ToFloat(Float16 x);   // exact
float ToFloat(BFloat16 x);  // exact: the bits are float's upper half

// Conversion by type, for templates over the two.
template <typename T, typename F>
T ToNarrow(F x) {
  if constexpr (std::is_same_v<T, Float16>) return ToFloat16(x);
  else return ToBFloat16(x);
}

}  // namespace gpusort::cli
