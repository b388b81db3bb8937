// server/core/key_order.h: the sort bits (ordered bits, complemented for a descending sort) that the
// GPU batch paths build their rows and composite keys from, on every dtype's special values; and the
// CPU engine's key types (server/backend/cpu/engine_key.h), one serving another.
#include "server/core/key_order.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "server/backend/cpu/engine_key.h"
#include "tests/support/inputs.h"

namespace gpusort::testing {
namespace {

template <typename T>
class SortBits : public ::testing::Test {};
using Dtypes = ::testing::Types<int32_t, uint32_t, int64_t, uint64_t, float, double>;
TYPED_TEST_SUITE(SortBits, Dtypes);

TYPED_TEST(SortBits, RoundTripBitExactAndOrderFollowsTheDirection) {
  using T = TypeParam;
  std::vector<T> keys = SpecialValues<T>();
  const std::vector<T> random = MakeInput<T>(Pattern::kRandom, 200, 7);
  keys.insert(keys.end(), random.begin(), random.end());
  for (const bool descending : {false, true}) {
    for (const T a : keys) {
      const OrderedBitsType<T> bits = ToSortBits(a, descending);
      EXPECT_EQ(std::bit_cast<OrderedBitsType<T>>(FromSortBits<T>(bits, descending)),
                std::bit_cast<OrderedBitsType<T>>(a));
      EXPECT_EQ(bits, descending ? static_cast<OrderedBitsType<T>>(~ToOrderedBits(a)) : ToOrderedBits(a));
      for (const T b : SpecialValues<T>()) {
        // Ascending sort bits order like the key order; descending ones in reverse.
        const bool before = descending ? KeyGreater<T>()(a, b) : KeyLess<T>()(a, b);
        EXPECT_EQ(bits < ToSortBits(b, descending), before);
      }
    }
  }
}

// server/backend/cpu/engine_key.h: the CPU engine of one key type serves another of its width with a
// constant folded into the mask. That holds only if the two ordered-bit maps differ by that constant on
// every bit pattern: every pattern of 8 and 16 bits, and for 32 and 64 bits the patterns where maps
// change behaviour (around zero, the sign bit, all ones) plus random ones.
template <typename T>
void ExpectEngineBiasHolds(OrderedBitsType<T> bits) {
  using E = cpu::EngineKeyType<T>;
  const OrderedBitsType<T> own = ToOrderedBits(std::bit_cast<T>(bits));
  const OrderedBitsType<T> served = ToOrderedBits(std::bit_cast<E>(bits)) ^ cpu::EngineBias<T>();
  ASSERT_EQ(own, served) << "bits " << static_cast<uint64_t>(bits);
  // And back: the engine writes FromOrderedBits<E>(u ^ bias ^ order mask) for an ordered u of T.
  ASSERT_EQ(std::bit_cast<OrderedBitsType<T>>(FromOrderedBits<E>(own ^ cpu::EngineBias<T>())), bits);
}

template <typename T>
void ExpectEngineBiasHoldsOnEveryPattern() {
  using U = OrderedBitsType<T>;
  for (uint32_t b = 0; b <= std::numeric_limits<U>::max(); ++b) ExpectEngineBiasHolds<T>(static_cast<U>(b));
}

template <typename T>
void ExpectEngineBiasHoldsOnBoundaries() {
  using U = OrderedBitsType<T>;
  constexpr U kSign = U{1} << (sizeof(U) * 8 - 1);
  std::vector<U> patterns;
  for (U around : {U{0}, kSign, static_cast<U>(~U{0}), static_cast<U>(kSign - 1)})
    for (int d = -3; d <= 3; ++d) patterns.push_back(static_cast<U>(around + static_cast<U>(d)));
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 10000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    patterns.push_back(static_cast<U>(x));
  }
  for (U bits : patterns) ExpectEngineBiasHolds<T>(bits);
}

TEST(EngineKey, SevenEnginesServeTwelveKeyTypes) {
  static_assert(std::is_same_v<cpu::EngineKeyType<int8_t>, uint8_t>);
  static_assert(std::is_same_v<cpu::EngineKeyType<int16_t>, uint16_t>);
  static_assert(std::is_same_v<cpu::EngineKeyType<BFloat16>, Float16>);
  static_assert(std::is_same_v<cpu::EngineKeyType<int32_t>, uint32_t>);
  static_assert(std::is_same_v<cpu::EngineKeyType<int64_t>, uint64_t>);
  static_assert(std::is_same_v<cpu::EngineKeyType<float>, float>);
  static_assert(std::is_same_v<cpu::EngineKeyType<double>, double>);
  EXPECT_EQ(cpu::EngineBias<int8_t>(), 0x80u);
  EXPECT_EQ(cpu::EngineBias<int16_t>(), 0x8000u);
  EXPECT_EQ(cpu::EngineBias<int32_t>(), 0x80000000u);
  EXPECT_EQ(cpu::EngineBias<int64_t>(), 0x8000000000000000ull);
  EXPECT_EQ(cpu::EngineBias<BFloat16>(), 0u);
  EXPECT_EQ(cpu::EngineBias<uint32_t>(), 0u);
  EXPECT_EQ(cpu::EngineBias<float>(), 0u);
}

TEST(EngineKey, TheBiasHoldsOnEveryNarrowPattern) {
  ExpectEngineBiasHoldsOnEveryPattern<int8_t>();
  ExpectEngineBiasHoldsOnEveryPattern<uint8_t>();
  ExpectEngineBiasHoldsOnEveryPattern<int16_t>();
  ExpectEngineBiasHoldsOnEveryPattern<uint16_t>();
  ExpectEngineBiasHoldsOnEveryPattern<Float16>();
  ExpectEngineBiasHoldsOnEveryPattern<BFloat16>();
}

TEST(EngineKey, TheBiasHoldsAcrossTheWideBoundaries) {
  ExpectEngineBiasHoldsOnBoundaries<int32_t>();
  ExpectEngineBiasHoldsOnBoundaries<uint32_t>();
  ExpectEngineBiasHoldsOnBoundaries<float>();
  ExpectEngineBiasHoldsOnBoundaries<int64_t>();
  ExpectEngineBiasHoldsOnBoundaries<uint64_t>();
  ExpectEngineBiasHoldsOnBoundaries<double>();
}

}  // namespace
}  // namespace gpusort::testing
