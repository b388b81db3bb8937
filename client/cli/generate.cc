#include "client/cli/generate.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "client/cli/dtype_names.h"

namespace gpusort::cli {

const std::vector<std::string>& Distributions() {
  static const std::vector<std::string> kNames = {"uniform", "normal",       "sorted",  "reversed",
                                                  "few-distinct", "all-equal", "bits"};
  return kNames;
}

absl::StatusOr<std::string> Generate(v1::DType dtype, std::size_t count,
                                     const std::string& distribution, uint64_t seed) {
  if (std::find(Distributions().begin(), Distributions().end(), distribution) ==
      Distributions().end())
    return absl::InvalidArgumentError("unknown distribution '" + distribution + "'");
  return VisitDType(dtype, [&](auto tag) -> absl::StatusOr<std::string> {
    using T = decltype(tag);
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    std::mt19937_64 rng(seed);
    std::vector<T> v(count);
    auto uniform = [&]() -> T {
      if constexpr (std::is_floating_point_v<T>)
        return std::uniform_real_distribution<T>(T(-1e6), T(1e6))(rng);
      else
        return static_cast<T>(rng());
    };
    if (distribution == "normal") {
      std::normal_distribution<double> normal(0.0, std::is_floating_point_v<T> ? 1.0 : 1e6);
      for (auto& x : v) {
        const double d = normal(rng);
        if constexpr (std::is_floating_point_v<T>) x = static_cast<T>(d);
        else if constexpr (std::is_signed_v<T>) x = static_cast<T>(std::llround(d));
        else x = static_cast<T>(std::llround(std::abs(d)));
      }
    } else if (distribution == "few-distinct") {
      T values[16];
      for (auto& x : values) x = uniform();
      for (auto& x : v) x = values[rng() % 16];
    } else if (distribution == "all-equal") {
      std::fill(v.begin(), v.end(), uniform());
    } else if (distribution == "bits") {
      for (auto& x : v) x = std::bit_cast<T>(static_cast<U>(rng()));
    } else {
      for (auto& x : v) x = uniform();
      if (distribution == "sorted") std::sort(v.begin(), v.end());
      if (distribution == "reversed") std::sort(v.rbegin(), v.rend());
    }
    std::string bytes(count * sizeof(T), '\0');
    if (count > 0) std::memcpy(bytes.data(), v.data(), bytes.size());
    return bytes;
  });
}

}  // namespace gpusort::cli
