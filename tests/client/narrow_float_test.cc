// The CLI's 16-bit floats (client/cli/narrow_float.h): conversions from float, double and decimal text
// against a slow reference that finds the nearest value by search over every pattern, and against
// NumPy's results; exact widening, NaN payloads kept; the bench checker's key order
// (client/cli/key_order.h) against totalOrder decided by value; and `gpusort gen` for every 8- and 16-bit dtype.
#include "client/cli/narrow_float.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "client/cli/dtype_names.h"
#include "client/cli/generate.h"
#include "client/cli/key_order.h"
#include "client/cli/narrow_float_text.h"

namespace gpusort::cli {
namespace {

// Every non-negative finite value of a format, indexed by its bits (which increase with the value), and
// one past the largest: the value the next exponent would start at, where infinity's rounding begins.
std::vector<double> PositiveValues(NarrowFormat f) {
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const int patterns = ((1 << f.exponent_bits) - 1) << f.mantissa_bits;  // up to infinity's bits
  std::vector<double> values;
  for (int b = 0; b <= patterns; ++b) {
    const int e = b >> f.mantissa_bits, m = b & ((1 << f.mantissa_bits) - 1);
    values.push_back(e == 0 ? std::ldexp(m, 1 - bias - f.mantissa_bits)
                            : std::ldexp((1 << f.mantissa_bits) + m, e - bias - f.mantissa_bits));
  }
  return values;  // the last entry, infinity's bits, holds 2^(emax + 1)
}

// The nearest pattern to the finite x by search, ties to the even pattern; infinity when nearer to
// 2^(emax + 1) than to the largest value (IEEE 754's rounding of an unbounded exponent).
std::uint16_t ReferenceRound(double x, NarrowFormat f) {
  static const std::vector<double> half = PositiveValues(kFloat16Format), bf = PositiveValues(kBFloat16Format);
  const std::vector<double>& values = f.exponent_bits == 5 ? half : bf;
  const double a = std::fabs(x);
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  auto upper = std::lower_bound(values.begin(), values.end(), a);
  if (upper == values.end()) return sign | static_cast<std::uint16_t>(values.size() - 1);
  if (*upper == a || upper == values.begin()) return sign | static_cast<std::uint16_t>(upper - values.begin());
  const auto lower = upper - 1;
  const double below = a - *lower, above = *upper - a;
  std::size_t pick = below < above ? lower - values.begin() : upper - values.begin();
  if (below == above) pick = ((lower - values.begin()) % 2 == 0) ? lower - values.begin() : upper - values.begin();
  return sign | static_cast<std::uint16_t>(pick);
}

float FloatOf(std::uint32_t bits) { return std::bit_cast<float>(bits); }

// Halfway points between neighbours, a float step either side of them, and random floats over the
// format's range and beyond: where round to nearest even can go wrong.
std::vector<float> HardFloats(NarrowFormat f) {
  const std::vector<double> values = PositiveValues(f);
  std::vector<float> xs;
  for (std::size_t i = 0; i + 1 < values.size(); ++i) {
    const float mid = static_cast<float>((values[i] + values[i + 1]) / 2);  // exact in float for both formats
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      xs.push_back(x);
      xs.push_back(-x);
    }
  }
  std::mt19937 rng(16);
  std::uniform_real_distribution<float> exponent(-30.0f, f.exponent_bits == 5 ? 17.0f : 129.0f);
  for (int i = 0; i < 200000; ++i)
    xs.push_back(std::ldexp(std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng), static_cast<int>(exponent(rng))));
  return xs;
}

TEST(NarrowFloat, Float16FromFloatAndDoubleRoundsToNearestEven) {
  for (float x : HardFloats(kFloat16Format)) {
    const std::uint16_t want = ReferenceRound(x, kFloat16Format);
    ASSERT_EQ(ToFloat16(x).bits, want) << x;
    ASSERT_EQ(ToFloat16(static_cast<double>(x)).bits, want) << x;
  }
}

TEST(NarrowFloat, BFloat16FromFloatAndDoubleRoundsToNearestEven) {
  for (float x : HardFloats(kBFloat16Format)) {
    const std::uint16_t want = ReferenceRound(x, kBFloat16Format);
    ASSERT_EQ(ToBFloat16(x).bits, want) << x;
    ASSERT_EQ(ToBFloat16(static_cast<double>(x)).bits, want) << x;
  }
  // The largest float rounds past bfloat16's largest value (3.3895e38) to infinity.
  EXPECT_EQ(ToBFloat16(std::numeric_limits<float>::max()).bits, 0x7F80);
  EXPECT_EQ(ToBFloat16(FloatOf(0x7F7F7FFF)).bits, 0x7F7F);
}

TEST(NarrowFloat, Float16FromFloatAgreesWithNumpy) {
  // /usr/bin/python3 (numpy 1.24.2): x = np.uint32(bits).view(np.float32); x.astype(np.float16).view(np.uint16)
  const std::pair<std::uint32_t, std::uint16_t> cases[] = {
      {0x3F800000u, 0x3C00}, {0x477FE000u, 0x7BFF}, {0x477FEF00u, 0x7BFF}, {0x477FF000u, 0x7C00},
      {0x33800000u, 0x0001}, {0x33000000u, 0x0000}, {0x33000001u, 0x0001}, {0x38800000u, 0x0400},
      {0x3F801000u, 0x3C00}, {0x3F803000u, 0x3C02}, {0x80000000u, 0x8000}, {0x2EDBE6FFu, 0x0000},
      {0x37FBA882u, 0x01F7}, {0x3DCCCCCDu, 0x2E66}, {0x47C35000u, 0x7C00},
      // NaNs: the payload's top 10 bits; one whose payload is all in the dropped bits becomes 1, not inf.
      {0x7FC00000u, 0x7E00}, {0x7F800001u, 0x7C01}, {0xFF800001u, 0xFC01}, {0x7FA00000u, 0x7D00},
      {0xFFFFFFFFu, 0xFFFF}, {0x7F802000u, 0x7C01}, {0x7F800000u, 0x7C00}, {0xFF800000u, 0xFC00}};
  for (const auto& [bits, want] : cases) EXPECT_EQ(ToFloat16(FloatOf(bits)).bits, want) << std::hex << bits;
}

TEST(NarrowFloat, DoubleIsRoundedOnceNotThroughFloat) {
  // 1 + 2^-11 + 2^-40 is just above the tie between float16's 1 and 1 + 2^-10. Through float it loses the
  // 2^-40 and lands on the tie (-> 1, even); once, it goes up. numpy agrees: np.float64(x).astype(np.float16)
  // is 0x3C01, np.float64(x).astype(np.float32).astype(np.float16) is 0x3C00.
  const double x = 1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(ToFloat16(x).bits, 0x3C01);
  EXPECT_EQ(ToFloat16(static_cast<float>(x)).bits, 0x3C00);
  const double y = 1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);  // the same for bfloat16 (7 mantissa bits)
  EXPECT_EQ(ToBFloat16(y).bits, 0x3F81);
  EXPECT_EQ(ToBFloat16(static_cast<float>(y)).bits, 0x3F80);
  EXPECT_EQ(ToFloat16(std::numeric_limits<double>::quiet_NaN()).bits, 0x7E00);
  EXPECT_EQ(ToBFloat16(-std::numeric_limits<double>::quiet_NaN()).bits, 0xFFC0);
  EXPECT_EQ(ToFloat16(1e300).bits, 0x7C00);
  EXPECT_EQ(ToFloat16(-1e-300).bits, 0x8000);
}

TEST(NarrowFloat, WideningIsExactAndNarrowingItBackGivesEveryPattern) {
  const std::vector<double> half_values = PositiveValues(kFloat16Format);  // by the formula
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float h = ToFloat(Float16{bits}), bf = ToFloat(BFloat16{bits});
    ASSERT_EQ(ToFloat16(h).bits, bits) << std::hex << b;  // NaN payloads included
    ASSERT_EQ(ToBFloat16(bf).bits, bits) << std::hex << b;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(bf), b << 16);
    if (std::isfinite(h)) {
      ASSERT_EQ(std::fabs(h), half_values[b & 0x7fff]) << std::hex << b;
      ASSERT_EQ(std::signbit(h), (b & 0x8000) != 0);
    }
  }
  // np.uint16(h).view(np.float16).astype(np.float32).view(np.uint32): payloads shift up 13 bits.
  EXPECT_EQ(std::bit_cast<std::uint32_t>(ToFloat(Float16{0x7C01})), 0x7F802000u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(ToFloat(Float16{0xFC01})), 0xFF802000u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(ToFloat(Float16{0x7FFF})), 0x7FFFE000u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(ToFloat(Float16{0x03FF})), 0x387FC000u);
}

TEST(NarrowFloat, DecimalsRoundLikeTheReference) {
  // Random decimals of 1 to 15 significant digits over both formats' ranges: strtod's double is then the
  // decimal's nearest and never a tie it is not, so rounding the double by search is the reference.
  std::mt19937_64 rng(16);
  for (int i = 0; i < 200000; ++i) {
    const NarrowFormat f = i % 2 ? kFloat16Format : kBFloat16Format;
    const double x = std::ldexp(std::uniform_real_distribution<double>(1, 2)(rng),
                                std::uniform_int_distribution<int>(f.exponent_bits == 5 ? -26 : -135,
                                                                   f.exponent_bits == 5 ? 16 : 128)(rng));
    char text[64];
    std::snprintf(text, sizeof text, "%.*e", std::uniform_int_distribution<int>(0, 14)(rng), x);
    const double parsed = std::strtod(text, nullptr);
    ASSERT_EQ(RoundDecimal(text, parsed, f), ReferenceRound(parsed, f)) << text;
  }
}

// totalOrder decided by value: NaNs outside everything by sign, then by payload; -0.0 before +0.0.
template <typename T>
bool TotalOrderLess(T a, T b) {
  const float x = ToFloat(a), y = ToFloat(b);
  auto rank = [](float v) { return std::isnan(v) ? (std::signbit(v) ? -1 : 1) : 0; };
  if (rank(x) != rank(y)) return rank(x) < rank(y);
  if (rank(x) != 0) return rank(x) < 0 ? (a.bits & 0x7fff) > (b.bits & 0x7fff) : (a.bits & 0x7fff) < (b.bits & 0x7fff);
  if (x != y) return x < y;
  return std::signbit(x) && !std::signbit(y);
}

template <typename T>
void ExpectKeyOrderIsTotalOrder() {
  std::vector<T> all;
  for (std::uint32_t b = 0; b < 65536; ++b) all.push_back(T{static_cast<std::uint16_t>(b)});
  std::sort(all.begin(), all.end(), TotalOrderLess<T>);
  for (std::size_t i = 1; i < all.size(); ++i)
    ASSERT_LT(OrderedBits(all[i - 1]), OrderedBits(all[i])) << std::hex << all[i - 1].bits << " " << all[i].bits;
  EXPECT_EQ(all.front().bits, 0xFFFF);  // -NaN with the largest payload first, +NaN likewise last
  EXPECT_EQ(all.back().bits, 0x7FFF);
}

TEST(NarrowFloat, CheckerKeyOrderIsTotalOrder) {
  ExpectKeyOrderIsTotalOrder<Float16>();
  ExpectKeyOrderIsTotalOrder<BFloat16>();
  EXPECT_LT(OrderedBits(int16_t{-32768}), OrderedBits(int16_t{-1}));
  EXPECT_LT(OrderedBits(int16_t{-1}), OrderedBits(int16_t{0}));
  EXPECT_LT(OrderedBits(int8_t{-128}), OrderedBits(int8_t{127}));
  EXPECT_LT(OrderedBits(uint8_t{127}), OrderedBits(uint8_t{128}));
}

template <typename T>
std::vector<T> Keys(const std::string& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

TEST(Generate, EveryNarrowDTypeAndDistribution) {
  for (DType d : {DType::kFloat16, DType::kBFloat16, DType::kInt16, DType::kUint16, DType::kInt8,
                      DType::kUint8}) {
    for (const std::string& dist : Distributions()) {
      auto bytes = Generate(d, 1001, dist, 7);
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      EXPECT_EQ(bytes->size(), 1001 * ElementSize(d)) << DTypeName(d) << " " << dist;
      EXPECT_EQ(*Generate(d, 1001, dist, 7), *bytes) << "reproducible from the seed";
    }
  }
  // float16's uniform stays within its range (1e6, the wider floats' bound, is past it) and spreads over it.
  float largest = 0;
  for (Float16 h : Keys<Float16>(*Generate(DType::kFloat16, 10000, "uniform", 1))) {
    ASSERT_TRUE(std::isfinite(ToFloat(h))) << std::hex << h.bits;
    largest = std::max(largest, std::fabs(ToFloat(h)));
  }
  EXPECT_GT(largest, 60000);
  const auto sorted = Keys<BFloat16>(*Generate(DType::kBFloat16, 1000, "sorted", 1));
  EXPECT_TRUE(std::is_sorted(sorted.begin(), sorted.end(),
                             [](BFloat16 a, BFloat16 b) { return ToFloat(a) < ToFloat(b); }));
  // Integers' normal: clamped into the range, not wrapped round it, and spread over it.
  const auto i8 = Keys<int8_t>(*Generate(DType::kInt8, 10000, "normal", 1));
  const auto [lo, hi] = std::minmax_element(i8.begin(), i8.end());
  EXPECT_LT(*lo, -64);
  EXPECT_GT(*hi, 64);
  const auto u8 = Keys<uint8_t>(*Generate(DType::kUint8, 10000, "normal", 1));
  EXPECT_LT(std::count_if(u8.begin(), u8.end(), [](uint8_t x) { return x > 200; }), 100);
}

}  // namespace
}  // namespace gpusort::cli
