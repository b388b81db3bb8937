// Moves opaque values of any width into sorted order: out[i] = in[perm[i]], value_width bytes each.
// Used for value widths the radix passes do not carry themselves (see sort.cc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpusort::cpu {

template <typename Index>
void GatherValues(const std::byte* in, std::size_t width, const Index* perm, std::size_t n,
                  std::byte* out, int threads);

extern template void GatherValues<uint32_t>(const std::byte*, std::size_t, const uint32_t*,
                                            std::size_t, std::byte*, int);
extern template void GatherValues<uint64_t>(const std::byte*, std::size_t, const uint64_t*,
                                            std::size_t, std::byte*, int);

}  // namespace gpusort::cpu
