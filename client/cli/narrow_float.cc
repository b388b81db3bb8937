#include "client/cli/narrow_float.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace gpusort::cli {
namespace {

int Bias(NarrowFormat f) { return (1 << (f.exponent_bits - 1)) - 1; }
std::uint16_t InfinityBits(NarrowFormat f) {
  return static_cast<std::uint16_t>(((1u << f.exponent_bits) - 1) << f.mantissa_bits);
}

// A positive magnitude as a multiple of its quantum in `f` (the value of the last mantissa bit at its
// exponent): magnitude = (whole + fraction) * 2^(exponent - mantissa_bits), whole < 2^(mantissa_bits + 1).
struct Split {
  double whole, fraction;
  int exponent;  // of the leading bit; the smallest normal exponent for subnormals
};
Split SplitAtQuantum(double magnitude, NarrowFormat f) {
  int e = 0;
  std::frexp(magnitude, &e);  // magnitude = m * 2^e with m in [0.5, 1): the leading bit is worth 2^(e-1)
  const int exponent = std::max(e - 1, 1 - Bias(f));
  // Exact: a scale by a power of two of a double, into [0, 2^(mantissa_bits + 1)).
  const double scaled = std::ldexp(magnitude, f.mantissa_bits - exponent);
  const double whole = std::floor(scaled);
  return {whole, scaled - whole, exponent};
}

// A NaN or infinity of `f` from a wider one's sign and mantissa field (`width` bits): the mantissa's top
// bits, and 1 where a NaN's payload lies wholly in the dropped bits, so that it stays a NaN.
std::uint16_t SpecialBits(bool negative, std::uint64_t mantissa, int width, NarrowFormat f) {
  auto payload = static_cast<std::uint16_t>(mantissa >> (width - f.mantissa_bits));
  if (mantissa != 0 && payload == 0) payload = 1;
  return static_cast<std::uint16_t>((negative ? 0x8000u : 0u) | InfinityBits(f) | payload);
}

template <typename Wide>
std::uint16_t Narrow(Wide x, NarrowFormat f) {
  using Bits = std::conditional_t<sizeof(Wide) == 4, std::uint32_t, std::uint64_t>;
  constexpr int kWidth = std::numeric_limits<Wide>::digits - 1;  // mantissa field bits: 23 or 52
  const Bits bits = std::bit_cast<Bits>(x);  // bits, not arithmetic: a signaling NaN stays as it is
  const bool negative = (bits >> (8 * sizeof(Wide) - 1)) != 0;
  if (!std::isfinite(x)) return SpecialBits(negative, bits & ((Bits{1} << kWidth) - 1), kWidth, f);
  const std::uint16_t sign = negative ? 0x8000u : 0u;
  return static_cast<std::uint16_t>(sign | RoundMagnitude(std::fabs(static_cast<double>(x)), f));
}

}  // namespace

std::uint16_t RoundMagnitude(double magnitude, NarrowFormat f, int beyond) {
  if (magnitude == 0) return 0;
  const Split s = SplitAtQuantum(magnitude, f);
  auto n = static_cast<std::int64_t>(s.whole);
  const bool tie = s.fraction == 0.5;
  if (s.fraction > 0.5 || (tie && (beyond > 0 || (beyond == 0 && (n & 1) != 0)))) ++n;
  // The biased exponent and the mantissa add up: a subnormal (biased exponent 0, n < 2^mantissa_bits)
  // is n itself, a normal's n carries its implicit leading bit into the exponent field, and a round up
  // to 2^(mantissa_bits + 1) carries into the next exponent, or to infinity.
  const std::int64_t bits = (std::int64_t{s.exponent + Bias(f) - 1} << f.mantissa_bits) + n;
  return static_cast<std::uint16_t>(std::min<std::int64_t>(bits, InfinityBits(f)));
}

bool IsHalfway(double magnitude, NarrowFormat f) {
  return magnitude != 0 && SplitAtQuantum(magnitude, f).fraction == 0.5;
}

Float16 ToFloat16(float x) { return {Narrow(x, kFloat16Format)}; }
Float16 ToFloat16(double x) { return {Narrow(x, kFloat16Format)}; }
BFloat16 ToBFloat16(float x) { return {Narrow(x, kBFloat16Format)}; }
BFloat16 ToBFloat16(double x) { return {Narrow(x, kBFloat16Format)}; }

float ToFloat(Float16 x) {
  const std::uint32_t sign = static_cast<std::uint32_t>(x.bits & 0x8000u) << 16;
  const std::uint32_t exponent = (x.bits >> 10) & 0x1fu, mantissa = x.bits & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

float ToFloat(BFloat16 x) { return std::bit_cast<float>(static_cast<std::uint32_t>(x.bits) << 16); }

}  // namespace gpusort::cli
