// A size flag's value in bytes or keys: digits with an optional K, M or G (binary: 2^10, 2^20, 2^30).
#pragma once

#include <cstddef>
#include <string>

namespace gpusort {

inline std::size_t ParseSize(const std::string& s) {
  const std::size_t value = std::stoull(s);
  switch (s.back()) {
    case 'K': return value << 10;
    case 'M': return value << 20;
    case 'G': return value << 30;
    default: return value;
  }
}

}  // namespace gpusort
