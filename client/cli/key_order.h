// The proto's key order (sort.proto: IEEE totalOrder for floats) as the order of unsigned integers of
// the key's width, for the bench checker (bench_runner.cc). Written here again rather than taken from
// the server's key_order.h: the checker is an oracle independent of what it checks, and the CLI does
// not depend on server/.
#pragma once

#include <bit>
#include <type_traits>

#include "client/cli/dtype_names.h"

namespace gpusort::cli {

// Floats (float16 and bfloat16 included): negative ones with all bits flipped, the others with the
// sign bit set, so -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN and NaNs by payload. Signed
// integers: the sign bit flipped. Unsigned integers: as they are.
template <typename T, typename U = KeyBitsType<T>>
U OrderedBits(T x) {
  const U bits = std::bit_cast<U>(x);
  constexpr U kSign = static_cast<U>(U{1} << (8 * sizeof(U) - 1));
  if constexpr (kIsFloatKey<T>) return static_cast<U>(bits ^ ((bits & kSign) ? static_cast<U>(~U{0}) : kSign));
  else if constexpr (std::is_signed_v<T>) return static_cast<U>(bits ^ kSign);
  else return bits;
}

}  // namespace gpusort::cli
