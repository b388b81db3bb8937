#include "server/backend/cpu/gather.h"

#include <cstring>

#include "server/backend/cpu/parallel.h"

namespace gpusort::cpu {
namespace {

// Reads are random: fetch the value needed this many elements ahead.
constexpr std::size_t kPrefetchDistance = 16;

// kWidth > 0: a compile-time width (the copy becomes a few moves); 0: `width` at run time.
template <std::size_t kWidth, typename Index>
void GatherRange(const std::byte* in, std::size_t width, const Index* perm, std::size_t begin,
                 std::size_t end, std::byte* out) {
  const std::size_t w = kWidth != 0 ? kWidth : width;
  for (std::size_t i = begin; i < end; ++i) {
    if (i + kPrefetchDistance < end) __builtin_prefetch(in + perm[i + kPrefetchDistance] * w);
    std::memcpy(out + i * w, in + perm[i] * w, kWidth != 0 ? kWidth : width);
  }
}

template <typename Index>
void GatherRangeAnyWidth(const std::byte* in, std::size_t width, const Index* perm,
                         std::size_t begin, std::size_t end, std::byte* out) {
  switch (width) {
    case 1: return GatherRange<1>(in, width, perm, begin, end, out);
    case 2: return GatherRange<2>(in, width, perm, begin, end, out);
    case 4: return GatherRange<4>(in, width, perm, begin, end, out);
    case 8: return GatherRange<8>(in, width, perm, begin, end, out);
    case 12: return GatherRange<12>(in, width, perm, begin, end, out);
    case 16: return GatherRange<16>(in, width, perm, begin, end, out);
    case 24: return GatherRange<24>(in, width, perm, begin, end, out);
    case 32: return GatherRange<32>(in, width, perm, begin, end, out);
    case 64: return GatherRange<64>(in, width, perm, begin, end, out);
    default: return GatherRange<0>(in, width, perm, begin, end, out);
  }
}

}  // namespace

template <typename Index>
void GatherValues(const std::byte* in, std::size_t width, const Index* perm, std::size_t n,
                  std::byte* out, int threads) {
  ForEachRange(n, threads, [&](std::size_t b, std::size_t e) {
    GatherRangeAnyWidth(in, width, perm, b, e, out);
  });
}

template void GatherValues<uint32_t>(const std::byte*, std::size_t, const uint32_t*, std::size_t,
                                     std::byte*, int);
template void GatherValues<uint64_t>(const std::byte*, std::size_t, const uint64_t*, std::size_t,
                                     std::byte*, int);

}  // namespace gpusort::cpu
