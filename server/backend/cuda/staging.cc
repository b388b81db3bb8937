#include "server/backend/cuda/staging.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <mutex>

#include "gpusort/kernels/memory.h"
#include "server/backend/cpu/parallel.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/core/key_order.h"
#include "server/core/status_macros.h"

namespace gpusort {
namespace {

// Host-side chunk work is split over this many threads: a staging chunk is a few MiB, and one core
// moves ~5 GB/s, short of PCIe's ~55 GB/s.
constexpr int kStagingThreads = 8;

std::size_t ChunkBytes(const StreamSlot& slot, std::size_t element_bytes) {
  return slot.staging[0].size() / element_bytes * element_bytes;  // whole elements per chunk
}

template <typename T>
void ToOrderedChunk(std::byte* dst, const std::byte* src, std::size_t bytes, bool descending,
                    KeyBitsScan* scan, std::mutex* merge) {
  using U = OrderedBitsType<T>;
  const U flip = descending ? static_cast<U>(~U{0}) : U{0};
  cpu::ForEachRange(bytes / sizeof(T), kStagingThreads, [&](std::size_t b, std::size_t e) {
    U or_bits = 0, and_bits = static_cast<U>(~U{0});
    for (std::size_t i = b; i < e; ++i) {
      T key;
      std::memcpy(&key, src + i * sizeof(T), sizeof(T));
      const U bits = ToOrderedBits(key) ^ flip;
      or_bits |= bits;
      and_bits &= bits;
      std::memcpy(dst + i * sizeof(U), &bits, sizeof(U));
    }
    std::lock_guard lock(*merge);
    scan->or_bits |= or_bits;
    scan->and_bits &= and_bits;  // zero-extended: bits above the key's width never vary
  });
}

template <typename T>
void FromOrderedChunk(std::byte* dst, const std::byte* src, std::size_t bytes, bool descending) {
  using U = OrderedBitsType<T>;
  const U flip = descending ? static_cast<U>(~U{0}) : U{0};
  cpu::ForEachRange(bytes / sizeof(T), kStagingThreads, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      U bits;
      std::memcpy(&bits, src + i * sizeof(U), sizeof(U));
      const T key = FromOrderedBits<T>(static_cast<U>(bits ^ flip));
      std::memcpy(dst + i * sizeof(T), &key, sizeof(T));
    }
  });
}

}  // namespace

absl::Status Upload(StreamSlot& slot, const std::byte* host, void* device_dst, std::size_t bytes,
                    std::size_t element_bytes, const ChunkFn& fill) {
  const std::size_t chunk = ChunkBytes(slot, element_bytes);
  auto* dst = static_cast<std::byte*>(device_dst);
  for (std::size_t offset = 0, c = 0; offset < bytes; offset += chunk, ++c) {
    const std::size_t len = std::min(chunk, bytes - offset);
    const int b = static_cast<int>(c % 2);
    // The copy that last read this pinned buffer must be done before the host overwrites it.
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[b].Synchronize(), "waiting for a staging buffer");
    fill(slot.staging[b].data(), host + offset, len);
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::CopyToDeviceAsync(dst + offset, slot.staging[b].data(), len, slot.stream), "host to device");
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[b].Record(slot.stream), "recording an event");
  }
  return absl::OkStatus();
}

absl::Status Download(StreamSlot& slot, const void* device_src, std::byte* host, std::size_t bytes,
                      std::size_t element_bytes, const ChunkFn& drain) {
  const std::size_t chunk = ChunkBytes(slot, element_bytes);
  const auto* src = static_cast<const std::byte*>(device_src);
  auto queue = [&](std::size_t c) -> absl::Status {
    const std::size_t offset = c * chunk;
    const int b = static_cast<int>(c % 2);
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::CopyToHostAsync(slot.staging[b].data(), src + offset, std::min(chunk, bytes - offset),
                                 slot.stream),
        "device to host");
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[b].Record(slot.stream), "recording an event");
    return absl::OkStatus();
  };
  const std::size_t chunks = (bytes + chunk - 1) / chunk;
  if (chunks > 0) RETURN_IF_ERROR(queue(0));
  for (std::size_t c = 0; c < chunks; ++c) {
    const int b = static_cast<int>(c % 2);
    // Queue the next chunk into the other buffer before draining this one, so the copy overlaps.
    if (c + 1 < chunks) RETURN_IF_ERROR(queue(c + 1));
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[b].Synchronize(), "device to host");
    const std::size_t offset = c * chunk;
    drain(host + offset, slot.staging[b].data(), std::min(chunk, bytes - offset));
  }
  return absl::OkStatus();
}

ChunkFn ToOrderedBitsFn(DType dtype, bool descending, KeyBitsScan* scan) {
  auto merge = std::make_shared<std::mutex>();
  return [=](std::byte* dst, const std::byte* src, std::size_t bytes) {
    VisitDType(dtype, [&](auto tag) {
      ToOrderedChunk<decltype(tag)>(dst, src, bytes, descending, scan, merge.get());
    });
  };
}

ChunkFn FromOrderedBitsFn(DType dtype, bool descending) {
  return [=](std::byte* dst, const std::byte* src, std::size_t bytes) {
    VisitDType(dtype, [&](auto tag) { FromOrderedChunk<decltype(tag)>(dst, src, bytes, descending); });
  };
}

ChunkFn PlainCopyFn() {
  return [](std::byte* dst, const std::byte* src, std::size_t bytes) {
    cpu::ParallelCopy(dst, src, bytes, kStagingThreads);
  };
}

absl::Status DownloadPositions(StreamSlot& slot, const std::uint32_t* device_positions, std::int64_t* out,
                               std::size_t count) {
  // Download addresses the host side at uint32 width: `dst` tells which chunk landed, and the chunk
  // widens into `out` at the same index (never past what is already written: out is twice as wide).
  auto* narrow = reinterpret_cast<std::byte*>(out);
  return Download(slot, device_positions, narrow, count * 4, 4,
                  [narrow, out](std::byte* dst, const std::byte* src, std::size_t bytes) {
                    const std::size_t first = static_cast<std::size_t>(dst - narrow) / 4;
                    const auto* positions = reinterpret_cast<const std::uint32_t*>(src);
                    cpu::ForEachRange(bytes / 4, kStagingThreads, [&](std::size_t b, std::size_t e) {
                      for (std::size_t i = b; i < e; ++i) out[first + i] = positions[i];
                    });
                  });
}

}  // namespace gpusort
