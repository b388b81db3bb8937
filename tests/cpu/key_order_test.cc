// server/core/key_order.h: the sort bits (ordered bits, complemented for a descending sort) that the
// GPU batch paths build their rows and composite keys from, on every dtype's special values.
#include "server/core/key_order.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

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

}  // namespace
}  // namespace gpusort::testing
