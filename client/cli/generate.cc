#include "client/cli/generate.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "client/cli/dtype_names.h"

namespace gpusort::cli {
namespace {

// The float the keys of T are drawn as: T itself, or float for the 16-bit floats (rounded after).
template <typename T>
using DrawType = std::conditional_t<kIsNarrowFloat<T>, float, T>;

template <typename T>
T FromDraw(DrawType<T> x) {
  if constexpr (kIsNarrowFloat<T>) return ToNarrow<T>(x);
  else return x;
}

// The finite range "uniform" draws floats from: [-1e6, 1e6), within float16's largest value (65504).
template <typename T>
constexpr float UniformLimit() {
  return std::is_same_v<T, Float16> ? 65504.0f : 1e6f;
}

// "normal" for integers: sd 1e6, or a quarter of the type's largest value for the 8- and 16-bit types
// (whose range 1e6 would overflow), clamped into the range rather than wrapped round it.
template <typename T>
T NormalInteger(double d) {
  using Limits = std::numeric_limits<T>;
  const double scaled = d * std::min(1e6, static_cast<double>(Limits::max()) / 4);
  const long long v = std::llround(std::is_signed_v<T> ? scaled : std::abs(scaled));
  if constexpr (sizeof(T) < 4) return static_cast<T>(std::clamp<long long>(v, Limits::min(), Limits::max()));
  else return static_cast<T>(v);
}

// Sorted by value (the keys are finite): the narrow floats compare as the floats they widen to.
template <typename T>
void SortByValue(std::vector<T>& v, bool reversed) {
  auto less = [](T a, T b) {
    if constexpr (kIsNarrowFloat<T>) return ToFloat(a) < ToFloat(b);
    else return a < b;
  };
  if (reversed) std::sort(v.rbegin(), v.rend(), less);
  else std::sort(v.begin(), v.end(), less);
}

template <typename T>
std::string GenerateAs(std::size_t count, const std::string& distribution, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(count);
  auto uniform = [&]() -> T {
    if constexpr (kIsFloatKey<T>) {
      using D = DrawType<T>;
      return FromDraw<T>(std::uniform_real_distribution<D>(D(-UniformLimit<T>()), D(UniformLimit<T>()))(rng));
    } else {
      return static_cast<T>(rng());
    }
  };
  if (distribution == "normal") {
    std::normal_distribution<double> normal(0.0, 1.0);
    for (auto& x : v) {
      const double d = normal(rng);
      if constexpr (kIsNarrowFloat<T>) x = ToNarrow<T>(d);  // rounded once, from the double
      else if constexpr (kIsFloatKey<T>) x = static_cast<T>(d);
      else x = NormalInteger<T>(d);
    }
  } else if (distribution == "few-distinct") {
    T values[16];
    for (auto& x : values) x = uniform();
    for (auto& x : v) x = values[rng() % 16];
  } else if (distribution == "all-equal") {
    std::fill(v.begin(), v.end(), uniform());
  } else if (distribution == "bits") {
    for (auto& x : v) x = std::bit_cast<T>(static_cast<KeyBitsType<T>>(rng()));
  } else {
    for (auto& x : v) x = uniform();
    if (distribution == "sorted" || distribution == "reversed") SortByValue(v, distribution == "reversed");
  }
  std::string bytes(count * sizeof(T), '\0');
  if (count > 0) std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

}  // namespace

const std::vector<std::string>& Distributions() {
  static const std::vector<std::string> kNames = {"uniform", "normal",       "sorted",  "reversed",
                                                  "few-distinct", "all-equal", "bits"};
  return kNames;
}

absl::StatusOr<std::string> Generate(DType dtype, std::size_t count,
                                     const std::string& distribution, uint64_t seed) {
  if (std::find(Distributions().begin(), Distributions().end(), distribution) ==
      Distributions().end())
    return absl::InvalidArgumentError("unknown distribution '" + distribution + "'");
  return VisitDType(dtype, [&](auto tag) -> absl::StatusOr<std::string> {
    return GenerateAs<decltype(tag)>(count, distribution, seed);
  });
}

}  // namespace gpusort::cli
