// The one key order (kernels/include/gpusort/kernels/key_order.h) on 16- and 8-bit keys, ahead of the
// dtypes issue 16 adds (float16, bfloat16, int16, uint16, int8, uint8): every bit pattern of each
// width, ordered by a reference that decodes the keys without the transform's bit trick (float16 by
// hand, bfloat16 as the float it widens to, integers by their C++ value), must get strictly increasing
// ordered bits, and the inverse must give every pattern back. Floats follow IEEE 754 totalOrder as
// sort.proto states it: -NaN (larger payload first) < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN
// (larger payload last).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <tuple>
#include <vector>

#include "gpusort/kernels/key_order.h"

namespace gpusort::kernels {
namespace {

// Where a float lies in totalOrder: (class, value, payload rank), compared as a tuple. Class 0 is
// -NaN, 1 every number (-inf .. +inf, -0.0 before +0.0), 2 +NaN.
using FloatRank = std::tuple<int, double, int, std::uint32_t>;

FloatRank RankOf(bool negative, bool nan, double value, std::uint32_t payload) {
  if (nan) return negative ? FloatRank{0, 0.0, 0, ~payload} : FloatRank{2, 0.0, 0, payload};
  // -0.0 and +0.0 compare equal as doubles: the sign breaks the tie.
  return FloatRank{1, value, negative ? 0 : 1, 0};
}

FloatRank Float16Rank(std::uint16_t h) {
  const bool negative = h >> 15;
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  if (exponent == 0x1F) {
    if (mantissa != 0) return RankOf(negative, true, 0, static_cast<std::uint32_t>(mantissa));
    return RankOf(negative, false, negative ? -INFINITY : INFINITY, 0);
  }
  // Subnormals: mantissa * 2^-24; normals: (1024 + mantissa) * 2^(exponent - 25).
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return RankOf(negative, false, negative ? -magnitude : magnitude, 0);
}

FloatRank BFloat16Rank(std::uint16_t b) {
  const float f = std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);  // exact: bfloat16 is float's top half
  const bool negative = std::signbit(f);
  if (std::isnan(f)) return RankOf(negative, true, 0, b & 0x7Fu);
  return RankOf(negative, false, f, 0);
}

// Every pattern of U, in the reference order `less`, must map to strictly increasing ordered bits.
template <typename U, KeyKind Kind, typename Less>
void ExpectOrderFollows(const Less& less) {
  std::vector<U> patterns(std::size_t{1} << (sizeof(U) * 8));
  std::iota(patterns.begin(), patterns.end(), U{0});
  std::stable_sort(patterns.begin(), patterns.end(), less);
  // Lambdas, because gtest's macros would split a template argument list at its comma.
  auto ordered = [](U bits) { return OrderedBits<U, Kind>(bits); };
  auto back = [](U bits) { return KeyBitsFromOrdered<U, Kind>(bits); };
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    EXPECT_EQ(back(ordered(patterns[i])), patterns[i]) << "pattern " << +patterns[i];
    if (i > 0) {
      ASSERT_LT(ordered(patterns[i - 1]), ordered(patterns[i])) << "patterns " << +patterns[i - 1] << " and "
                                                                << +patterns[i];
    }
  }
}

TEST(NarrowKeyOrder, Float16IsTotalOrderOverEveryPattern) {
  ExpectOrderFollows<std::uint16_t, KeyKind::kFloat>(
      [](std::uint16_t a, std::uint16_t b) { return Float16Rank(a) < Float16Rank(b); });
}

TEST(NarrowKeyOrder, BFloat16IsTotalOrderOverEveryPattern) {
  ExpectOrderFollows<std::uint16_t, KeyKind::kFloat>(
      [](std::uint16_t a, std::uint16_t b) { return BFloat16Rank(a) < BFloat16Rank(b); });
}

TEST(NarrowKeyOrder, Int16AndInt8FollowTheirValues) {
  ExpectOrderFollows<std::uint16_t, KeyKind::kSigned>(
      [](std::uint16_t a, std::uint16_t b) { return static_cast<std::int16_t>(a) < static_cast<std::int16_t>(b); });
  ExpectOrderFollows<std::uint8_t, KeyKind::kSigned>(
      [](std::uint8_t a, std::uint8_t b) { return static_cast<std::int8_t>(a) < static_cast<std::int8_t>(b); });
}

TEST(NarrowKeyOrder, UInt16AndUInt8AreTheirOwnOrder) {
  ExpectOrderFollows<std::uint16_t, KeyKind::kUnsigned>(std::less<std::uint16_t>());
  ExpectOrderFollows<std::uint8_t, KeyKind::kUnsigned>(std::less<std::uint8_t>());
}

// The reference itself, on values whose order is known: it must not be the thing that is wrong.
TEST(NarrowKeyOrder, TheReferenceKnowsItsLandmarks) {
  // float16: -NaN < -inf < -65504 < -1 < -min subnormal < -0 < +0 < +min subnormal < 1 < 65504 < +inf < +NaN
  const std::vector<std::uint16_t> f16 = {0xFE00, 0xFC00, 0xFBFF, 0xBC00, 0x8001, 0x8000,
                                          0x0000, 0x0001, 0x3C00, 0x7BFF, 0x7C00, 0x7E00};
  for (std::size_t i = 1; i < f16.size(); ++i) EXPECT_LT(Float16Rank(f16[i - 1]), Float16Rank(f16[i])) << i;
  EXPECT_EQ(std::get<1>(Float16Rank(0x3C00)), 1.0);
  EXPECT_EQ(std::get<1>(Float16Rank(0x7BFF)), 65504.0);
  EXPECT_EQ(std::get<1>(Float16Rank(0x0001)), std::ldexp(1.0, -24));
  // Among NaNs: a +NaN with a larger payload later, a -NaN with a larger payload earlier.
  EXPECT_LT(Float16Rank(0x7C01), Float16Rank(0x7E00));
  EXPECT_LT(Float16Rank(0xFE00), Float16Rank(0xFC01));
  // bfloat16: the same landmarks.
  const std::vector<std::uint16_t> bf16 = {0xFFC0, 0xFF80, 0xBF80, 0x8001, 0x8000, 0x0000, 0x0001, 0x3F80, 0x7F80, 0x7FC0};
  for (std::size_t i = 1; i < bf16.size(); ++i) EXPECT_LT(BFloat16Rank(bf16[i - 1]), BFloat16Rank(bf16[i])) << i;
}

}  // namespace
}  // namespace gpusort::kernels
