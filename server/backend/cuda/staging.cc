#include "server/backend/cuda/staging.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <mutex>

#include "gpusort/kernels/memory.h"
#include "server/backend/cpu/parallel.h"
#include "server/backend/cuda/device_key_bits.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/core/key_order.h"
#include "server/core/status_macros.h"

namespace gpusort {
namespace {

// Host-side chunk work is split over this many threads: a staging chunk is a few MiB, and one core
// moves ~5 GB/s, short of PCIe's ~55 GB/s.
constexpr int kStagingThreads = 8;

// Whole elements per chunk, so that neither side's pinned buffer overflows.
std::size_t ChunkElements(const StreamSlot& slot, ElementBytes bytes) {
  return slot.staging[0].size() / std::max(bytes.host, bytes.device);
}

// Host keys T -> device bits W (the ordered bits, complemented for descending, zero-extended when W is
// wider than T).
template <typename T, typename W>
void ToOrderedChunk(std::byte* dst, const std::byte* src, std::size_t count, bool descending,
                    KeyBitsScan* scan, std::mutex* merge) {
  using U = OrderedBitsType<T>;
  const U flip = descending ? static_cast<U>(~U{0}) : U{0};
  cpu::ForEachRange(count, kStagingThreads, [&](std::size_t b, std::size_t e) {
    W or_bits = 0, and_bits = static_cast<W>(~W{0});
    for (std::size_t i = b; i < e; ++i) {
      T key;
      std::memcpy(&key, src + i * sizeof(T), sizeof(T));
      const W bits = static_cast<U>(ToOrderedBits(key) ^ flip);
      or_bits |= bits;
      and_bits &= bits;
      std::memcpy(dst + i * sizeof(W), &bits, sizeof(W));
    }
    std::lock_guard lock(*merge);
    scan->or_bits |= or_bits;
    scan->and_bits &= and_bits;  // zero-extended: bits above the key's width never vary
  });
}

template <typename T, typename W>
void FromOrderedChunk(std::byte* dst, const std::byte* src, std::size_t count, bool descending) {
  using U = OrderedBitsType<T>;
  const U flip = descending ? static_cast<U>(~U{0}) : U{0};
  cpu::ForEachRange(count, kStagingThreads, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      W bits;
      std::memcpy(&bits, src + i * sizeof(W), sizeof(W));
      const T key = FromOrderedBits<T>(static_cast<U>(static_cast<U>(bits) ^ flip));
      std::memcpy(dst + i * sizeof(T), &key, sizeof(T));
    }
  });
}

}  // namespace

absl::Status Upload(StreamSlot& slot, const std::byte* host, void* device_dst, std::size_t elements,
                    ElementBytes bytes, const ChunkFn& fill) {
  const std::size_t chunk = ChunkElements(slot, bytes);
  auto* dst = static_cast<std::byte*>(device_dst);
  for (std::size_t first = 0, c = 0; first < elements; first += chunk, ++c) {
    const std::size_t len = std::min(chunk, elements - first);
    const int b = static_cast<int>(c % 2);
    // The copy that last read this pinned buffer must be done before the host overwrites it.
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[b].Synchronize(), "waiting for a staging buffer");
    fill(slot.staging[b].data(), host + first * bytes.host, len);
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyToDeviceAsync(dst + first * bytes.device, slot.staging[b].data(),
                                                              len * bytes.device, slot.stream),
                                   "host to device");
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[b].Record(slot.stream), "recording an event");
  }
  return absl::OkStatus();
}

absl::Status Download(StreamSlot& slot, const void* device_src, std::byte* host, std::size_t elements,
                      ElementBytes bytes, const ChunkFn& drain) {
  const std::size_t chunk = ChunkElements(slot, bytes);
  const auto* src = static_cast<const std::byte*>(device_src);
  auto queue = [&](std::size_t c) -> absl::Status {
    const std::size_t first = c * chunk;
    const int b = static_cast<int>(c % 2);
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::CopyToHostAsync(slot.staging[b].data(), src + first * bytes.device,
                                 std::min(chunk, elements - first) * bytes.device, slot.stream),
        "device to host");
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[b].Record(slot.stream), "recording an event");
    return absl::OkStatus();
  };
  const std::size_t chunks = (elements + chunk - 1) / chunk;
  if (chunks > 0) RETURN_IF_ERROR(queue(0));
  for (std::size_t c = 0; c < chunks; ++c) {
    const int b = static_cast<int>(c % 2);
    // Queue the next chunk into the other buffer before draining this one, so the copy overlaps.
    if (c + 1 < chunks) RETURN_IF_ERROR(queue(c + 1));
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[b].Synchronize(), "device to host");
    const std::size_t first = c * chunk;
    drain(host + first * bytes.host, slot.staging[b].data(), std::min(chunk, elements - first));
  }
  return absl::OkStatus();
}

ElementBytes KeyElementBytes(DType dtype, bool native_width) {
  return {ElementSize(dtype), native_width ? ElementSize(dtype) : DeviceKeyBytes(dtype)};
}

ChunkFn ToOrderedBitsFn(DType dtype, bool descending, KeyBitsScan* scan, bool native_width) {
  auto merge = std::make_shared<std::mutex>();
  return [=](std::byte* dst, const std::byte* src, std::size_t count) {
    VisitDType(dtype, [&](auto tag) {
      using T = decltype(tag);
      if (native_width) {
        ToOrderedChunk<T, OrderedBitsType<T>>(dst, src, count, descending, scan, merge.get());
      } else {
        ToOrderedChunk<T, DeviceBitsType<T>>(dst, src, count, descending, scan, merge.get());
      }
    });
  };
}

ChunkFn FromOrderedBitsFn(DType dtype, bool descending, bool native_width) {
  return [=](std::byte* dst, const std::byte* src, std::size_t count) {
    VisitDType(dtype, [&](auto tag) {
      using T = decltype(tag);
      if (native_width) {
        FromOrderedChunk<T, OrderedBitsType<T>>(dst, src, count, descending);
      } else {
        FromOrderedChunk<T, DeviceBitsType<T>>(dst, src, count, descending);
      }
    });
  };
}

ChunkFn PlainCopyFn(std::size_t element_bytes) {
  return [element_bytes](std::byte* dst, const std::byte* src, std::size_t count) {
    cpu::ParallelCopy(dst, src, count * element_bytes, kStagingThreads);
  };
}

absl::Status DownloadPositions(StreamSlot& slot, const std::uint32_t* device_positions, std::int64_t* out,
                               std::size_t count) {
  return Download(slot, device_positions, reinterpret_cast<std::byte*>(out), count, ElementBytes{8, 4},
                  [](std::byte* dst, const std::byte* src, std::size_t elements) {
                    const auto* positions = reinterpret_cast<const std::uint32_t*>(src);
                    auto* wide = reinterpret_cast<std::int64_t*>(dst);
                    cpu::ForEachRange(elements, kStagingThreads, [&](std::size_t b, std::size_t e) {
                      for (std::size_t i = b; i < e; ++i) wide[i] = positions[i];
                    });
                  });
}

}  // namespace gpusort
