#include "client/cli/narrow_float_text.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>

namespace gpusort::cli {
namespace {

// A positive decimal as 0.d1 d2 d3 ... * 10^exponent with d1 != 0 and no trailing zeros (no digits:
// zero), so that two of them compare by exponent, then by their digit strings.
struct Decimal {
  std::string digits;
  std::int64_t exponent = 0;
};

// `text`: digits, an optional '.', an optional exponent (e or E, optional sign), as std::from_chars and
// std::to_chars write them. False when the exponent does not fit in 64 bits.
bool Normalize(std::string_view text, Decimal* out) {
  const std::size_t e = text.find_first_of("eE");
  std::int64_t exponent = 0;
  if (e != std::string_view::npos) {
    std::string_view power = text.substr(e + 1);
    if (!power.empty() && power.front() == '+') power.remove_prefix(1);
    if (std::from_chars(power.data(), power.data() + power.size(), exponent).ec != std::errc()) return false;
    text = text.substr(0, e);
  }
  bool before_point = true;
  for (char c : text) {
    if (c == '.') {
      before_point = false;
    } else if (c == '0' && out->digits.empty()) {
      if (!before_point) --exponent;  // a leading zero after the point: one decade smaller
    } else {
      out->digits += c;
      if (before_point) ++exponent;
    }
  }
  while (!out->digits.empty() && out->digits.back() == '0') out->digits.pop_back();
  out->exponent = exponent;
  return true;
}

// The sign of text - value, exactly, for a finite decimal `text` and a positive double `value`.
int CompareExactly(std::string_view text, double value) {
  // 800 significant digits hold any double's exact decimal expansion (at most 767 digits).
  char buffer[900];
  const auto printed = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific, 800);
  Decimal a, b;
  if (!Normalize(text, &a) || printed.ec != std::errc() || !Normalize({buffer, printed.ptr}, &b))
    return 0;  // cannot happen for text from_chars read as a finite double; then the tie goes to even
  if (a.digits.empty() || b.digits.empty())  // a zero: not a tie's, but kept exact all the same
    return static_cast<int>(!a.digits.empty()) - static_cast<int>(!b.digits.empty());
  if (a.exponent != b.exponent) return a.exponent < b.exponent ? -1 : 1;
  const int c = a.digits.compare(b.digits);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

// `candidate` to `digits` significant digits, as text, if that reads back to `magnitude` in `format`.
std::optional<std::string> ReadsBack(double candidate, int digits, std::uint16_t magnitude, NarrowFormat format) {
  char buffer[64];
  const auto r = std::to_chars(buffer, buffer + sizeof buffer, candidate, std::chars_format::scientific, digits - 1);
  double parsed = 0;
  std::from_chars(buffer, r.ptr, parsed);
  if (RoundDecimal({buffer, r.ptr}, parsed, format) != magnitude) return std::nullopt;
  return std::string(buffer, r.ptr);
}

template <typename T>
std::string ToText(T x) {
  const float value = ToFloat(x);  // exact
  const bool negative = std::signbit(value);
  if (std::isnan(value)) return negative ? "-nan" : "nan";  // as to_chars writes float's
  if (std::isinf(value)) return negative ? "-inf" : "inf";
  const std::uint16_t magnitude = x.bits & 0x7fffu;
  const double v = std::fabs(value);
  // Decimals of 1, 2, ... significant digits until one reads back: the one nearest the value, else its
  // neighbours a unit of the last digit away (at a power of two the values that read back reach twice
  // as far above it as below: float16's 2^-6 reads back from 0.01563, not from the nearer 0.01562).
  // float's 9 digits always read back.
  for (int digits = 1; digits <= 9; ++digits) {
    std::optional<std::string> found = ReadsBack(v, digits, magnitude, FormatOf<T>());
    if (!found) {
      const double unit = std::pow(10.0, std::floor(std::log10(v)) - digits + 1);  // rounded again when printed
      found = ReadsBack(v + unit, digits, magnitude, FormatOf<T>());
      if (!found) found = ReadsBack(v - unit, digits, magnitude, FormatOf<T>());
    }
    if (!found) continue;
    // The double of a decimal this short prints as that decimal, in to_chars' shortest form.
    double parsed = 0;
    std::from_chars(found->data(), found->data() + found->size(), parsed);
    char buffer[64];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, negative ? -parsed : parsed);
    return std::string(buffer, r.ptr);
  }
  return std::to_string(value);  // not reached
}

}  // namespace

std::uint16_t RoundDecimal(std::string_view text, double parsed, NarrowFormat format) {
  const double magnitude = std::fabs(parsed);
  // Only a double exactly halfway needs the decimal itself: any other double nearest the decimal lies
  // on the decimal's side of every narrow tie (the ties are doubles too), so it rounds the same way.
  const int beyond = IsHalfway(magnitude, format) ? CompareExactly(text, magnitude) : 0;
  return RoundMagnitude(magnitude, format, beyond);
}

std::string NarrowToText(Float16 x) { return ToText(x); }
std::string NarrowToText(BFloat16 x) { return ToText(x); }

}  // namespace gpusort::cli
