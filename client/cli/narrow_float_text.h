// Text for the 16-bit float keys. A decimal is rounded to the narrow format once, from its exact value:
// going through float or double first would round twice, and a decimal just off a tie between two
// narrow values could land on the tie and be decided the wrong way. A narrow value prints as the
// shortest decimal that reads back to its bits ("0.1" for float16's 0.0999755859375), in the form
// std::to_chars gives the wider floats (nan, -nan, inf, -inf, -0 included).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "client/cli/narrow_float.h"

namespace gpusort::cli {

// The magnitude bits of the decimal `text` (digits with an optional '.' and exponent, no sign: what
// std::from_chars reads as a finite double) rounded to `format`, to nearest, ties to even; infinity's
// bits past the largest finite value. `parsed` is the double std::from_chars read from `text`.
std::uint16_t RoundDecimal(std::string_view text, double parsed, NarrowFormat format);

// Shortest text reading back to x's bits (NaNs: to a NaN of the same sign, as for the wider floats).
std::string NarrowToText(Float16 x);
std::string NarrowToText(BFloat16 x);

}  // namespace gpusort::cli
