// Sorts of a few hundred elements: one std::sort of (ordered key, input position) pairs on the calling
// thread, cheaper than the radix passes' histograms at this size. The position makes every pair
// distinct, so the result is the stable order in either direction.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "server/backend/cpu/unaligned.h"
#include "server/core/key_order.h"
#include "server/core/spec.h"

namespace gpusort::cpu {

inline constexpr std::size_t kSmallSortMax = 256;  // sizes below this take the small path

// n < kSmallSortMax, sorted by ToOrderedBits(key) ^ mask ascending (engine_key.h: OrderMask and the
// bias). Buffers as in SortBuffers (values/values_out/indices_out per `payload`).
template <typename T>
void SmallSort(std::size_t n, std::byte* keys, OrderedBitsType<T> mask, SortPayload payload,
               const std::byte* values, std::size_t value_width, std::byte* values_out,
               int64_t* indices_out) {
  using U = OrderedBitsType<T>;
  if (payload == SortPayload::kNone) {  // equal keys are identical bits: stability is moot
    U bits[kSmallSortMax];
    for (std::size_t i = 0; i < n; ++i) bits[i] = ToOrderedBits(LoadAt<T>(keys, i)) ^ mask;
    std::sort(bits, bits + n);
    for (std::size_t i = 0; i < n; ++i) StoreAt<T>(keys, i, FromOrderedBits<T>(bits[i] ^ mask));
    return;
  }
  struct Entry {
    U key;
    uint32_t pos;
  };
  Entry entries[kSmallSortMax];
  for (std::size_t i = 0; i < n; ++i)
    entries[i] = {static_cast<U>(ToOrderedBits(LoadAt<T>(keys, i)) ^ mask), static_cast<uint32_t>(i)};
  std::sort(entries, entries + n, [](const Entry& a, const Entry& b) {
    return a.key != b.key ? a.key < b.key : a.pos < b.pos;
  });
  for (std::size_t i = 0; i < n; ++i) {
    StoreAt<T>(keys, i, FromOrderedBits<T>(entries[i].key ^ mask));
    if (payload == SortPayload::kIndices) {
      indices_out[i] = entries[i].pos;
    } else {
      std::memcpy(values_out + i * value_width, values + entries[i].pos * value_width, value_width);
    }
  }
}

}  // namespace gpusort::cpu
