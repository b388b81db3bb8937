// Keys <-> order-preserving unsigned bits, on the device: the map of gpusort/kernels/key_order.h, which
// the host uses too (server/core/key_order.h), so that the radix sort's unsigned order is the service's
// key order. Used where the host must not touch the keys: arrays in shared memory that
// the device reads and writes directly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpusort/kernels/key_order.h"
#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"

namespace gpusort::kernels {

// In place: each key becomes its ordered bits, complemented when `complement` (descending order, or the
// largest-first top-k). The OR and the AND of every result are folded into or_and[0] and or_and[1] (a
// device array the caller sets to {0, ~0} first), so that or_and[0] ^ or_and[1] are the bits that vary;
// a null or_and folds nothing (a job that sorts every bit).
// KeyWidth::k16: 16-bit keys to their own 16-bit ordered bits (for SMALL_K's 16-bit keys).
Status ToOrderedBitsAsync(KeyWidth width, KeyKind kind, bool complement, void* keys, std::size_t count,
                          std::uint64_t* or_and, const Stream& stream);

// The inverse, in place.
Status FromOrderedBitsAsync(KeyWidth width, KeyKind kind, bool complement, void* keys, std::size_t count,
                            const Stream& stream);

// Both out of place, `in` left as it is: one pass that copies and converts (keys in a caller's device
// region into a job's buffer, and the answer back into the caller's output range). ToOrderedBitsCopyAsync
// takes a null `out` too: it then only folds or_and, to learn which bits vary in keys a job reads where
// they lie (a sort of a caller's unsigned keys, whose ordered bits are the keys themselves).
Status ToOrderedBitsCopyAsync(KeyWidth width, KeyKind kind, bool complement, const void* in, void* out,
                              std::size_t count, std::uint64_t* or_and, const Stream& stream);
Status FromOrderedBitsCopyAsync(KeyWidth width, KeyKind kind, bool complement, const void* in, void* out,
                                std::size_t count, const Stream& stream);

// Narrow keys (key_bytes 1 or 2) at `narrow` -> their ordered bits, complemented within the key's
// width when `complement`, zero-extended to 32 bits at `wide` (another buffer), so that the 32-bit
// kernels serve them. or_and as for ToOrderedBitsAsync.
Status WidenToOrderedBitsAsync(std::size_t key_bytes, KeyKind kind, bool complement, const void* narrow,
                               std::uint32_t* wide, std::size_t count, std::uint64_t* or_and, const Stream& stream);
// The inverse: 32-bit ordered bits at `wide` -> narrow keys at `narrow`.
Status NarrowFromOrderedBitsAsync(std::size_t key_bytes, KeyKind kind, bool complement, const std::uint32_t* wide,
                                  void* narrow, std::size_t count, const Stream& stream);

}  // namespace gpusort::kernels
