// Moves arrays between pageable host memory (the gRPC message) and the device through a slot's two
// pinned buffers, chunk by chunk: the host fills (or drains) one buffer while the other one copies.
// A per-chunk function does the host side of each copy, so that work the engine needs anyway rides on
// the copy for free: keys become order-preserving bits (and their varying bits are noted) on the way
// in, and back on the way out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "server/backend/cuda/device_context.h"
#include "server/core/dtype.h"
#include "server/core/varying_bits.h"

namespace gpusort {

// Bytes per element on each side of a copy: the same, except where keys widen on the way to the
// device (device_key_bits.h) or uint32 positions widen to the API's int64 on the way back.
struct ElementBytes {
  std::size_t host;
  std::size_t device;
};

// fn(dst, src, elements): fill pinned (device-side layout) from host (upload), or host from pinned
// (download).
using ChunkFn = std::function<void(std::byte* dst, const std::byte* src, std::size_t elements)>;

// Copies `elements` from host to device_dst. Returns once every chunk is queued on the slot's stream.
absl::Status Upload(StreamSlot& slot, const std::byte* host, void* device_dst, std::size_t elements,
                    ElementBytes bytes, const ChunkFn& fill);
// Copies `elements` from device_src to host; returns when the host has all of it.
absl::Status Download(StreamSlot& slot, const void* device_src, std::byte* host, std::size_t elements,
                      ElementBytes bytes, const ChunkFn& drain);

// Keys -> ordered bits (complemented for descending order), accumulating the OR and the AND of every
// result: the bits that vary across the keys are exactly or ^ and.
struct KeyBitsScan {
  std::uint64_t or_bits = 0;
  std::uint64_t and_bits = ~std::uint64_t{0};
  std::uint64_t varying() const { return or_bits ^ and_bits; }
};
// The radix sort runs over the bits that vary: VaryingBitRange (server/core/varying_bits.h).

// Keys on the host <-> their ordered bits on the device (DeviceKeyBytes wide, or the key's own width where
// `native_width`: a kernel that takes 16-bit keys as they are), with these element sizes.
ElementBytes KeyElementBytes(DType dtype, bool native_width = false);
ChunkFn ToOrderedBitsFn(DType dtype, bool descending, KeyBitsScan* scan, bool native_width = false);
ChunkFn FromOrderedBitsFn(DType dtype, bool descending, bool native_width = false);
ChunkFn PlainCopyFn(std::size_t element_bytes);
// `count` uint32 positions on the device -> int64 at `out` on the host, widened as each chunk lands.
absl::Status DownloadPositions(StreamSlot& slot, const std::uint32_t* device_positions, std::int64_t* out,
                               std::size_t count);

}  // namespace gpusort
