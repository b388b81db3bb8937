// The bits that vary across a set of keys' ordered bits, from their OR and their AND (or ^ and): what a
// radix sort must sort, and what a bisection of the key space must decide.
#pragma once

#include <bit>
#include <cstdint>

namespace gpusort {

// [lowest varying bit, highest varying bit + 1); none (both 0) when nothing varies (every key is the
// same, and so is the answer).
inline void VaryingBitRange(std::uint64_t varying, int* begin_bit, int* end_bit) {
  if (varying == 0) {
    *begin_bit = *end_bit = 0;
    return;
  }
  *begin_bit = std::countr_zero(varying);
  *end_bit = 64 - std::countl_zero(varying);
}

}  // namespace gpusort
