// Device memory from the device's stream-ordered pool (cudaMallocAsync), pinned host memory, and copies.
// The pool keeps freed memory (release threshold: unlimited), so once warm a request's allocations
// never reach cudaMalloc; Trim() hands the cache back when an allocation fails.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"

namespace gpusort::kernels {

class DeviceMemoryPool;

// Device bytes owned by one request; freed in stream order on the stream it was allocated on.
class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  ~DeviceAllocation();
  DeviceAllocation(DeviceAllocation&& other) noexcept;
  DeviceAllocation& operator=(DeviceAllocation&& other) noexcept;
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;

  // `size` bytes at `data` inside memory someone else owns and frees (a stream slot's kept block,
  // server/backend/cuda/device_context.h): this object never frees them.
  static DeviceAllocation Borrowed(void* data, std::size_t size);

  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  void Reset();

 private:
  friend class DeviceMemoryPool;
  void* data_ = nullptr;
  std::size_t size_ = 0;
  void* stream_ = nullptr;  // cudaStream_t the free is ordered on
  bool owned_ = true;       // false: Borrowed, freed by its owner
};

struct PoolCounters {
  std::uint64_t used_bytes = 0;      // handed out now (cudaMemPoolAttrUsedMemCurrent)
  std::uint64_t reserved_bytes = 0;  // held by the pool from the driver (cudaMemPoolAttrReservedMemCurrent)
  std::uint64_t used_high_bytes = 0; // high-water mark of used_bytes
};

class DeviceMemoryPool {
 public:
  DeviceMemoryPool() = default;
  // The default pool of `ordinal`, set to keep what is freed.
  static Status Create(int ordinal, DeviceMemoryPool* out);

  // Stream-ordered allocation on `stream`; kOutOfMemory when the device has no room.
  Status Allocate(std::size_t bytes, const Stream& stream, DeviceAllocation* out) const;
  // Maps the pool's memory, present and future, for device `ordinal` too, so that copies between the
  // two GPUs run peer to peer (stream-ordered allocations ignore cudaDeviceEnablePeerAccess).
  Status AllowAccessFrom(int ordinal) const;
  // Returns the pool's unused memory to the driver (all of it not in use).
  void Trim() const;
  PoolCounters Counters() const;

 private:
  void* pool_ = nullptr;  // cudaMemPool_t
};

// Page-locked host memory, for copies that run at PCIe speed and overlap with the host.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  // By cudaHostAlloc: the driver touches and locks the pages one at a time.
  static Status Allocate(std::size_t bytes, PinnedBuffer* out);
  // For large buffers: anonymous memory on huge pages where the kernel gives them, every page touched by
  // every core at once, then registered; `bytes` rounded up to whole huge pages. 16 GiB took 0.63 s on
  // the H200 host against Allocate's 7.62 s (bench/host_pin_probe.cc, 2026-11-29).
  static Status AllocateTouched(std::size_t bytes, PinnedBuffer* out);
  std::byte* data() const { return static_cast<std::byte*>(data_); }
  std::size_t size() const { return size_; }

 private:
  void Release();

  void* data_ = nullptr;
  std::size_t size_ = 0;
  bool mapped_ = false;  // AllocateTouched's: unregistered and unmapped, not freed by the driver
};

// Host memory someone else owns (a shared-memory region), registered with the driver so that copies to
// and from it run at PCIe speed, as from pinned memory. Registering costs milliseconds for tens of MiB
// (3.6 ms for 64 MiB on the H100 machine): once per region, never per request. Unregisters when destroyed;
// the memory must stay mapped until then.
class HostRegistration {
 public:
  HostRegistration() = default;
  ~HostRegistration();
  HostRegistration(HostRegistration&& other) noexcept;
  HostRegistration& operator=(HostRegistration&& other) noexcept;
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;

  static Status Register(void* data, std::size_t bytes, HostRegistration* out);

 private:
  void* data_ = nullptr;
};

Status CopyToDeviceAsync(void* device_dst, const void* host_src, std::size_t bytes, const Stream& stream);
Status CopyToHostAsync(void* host_dst, const void* device_src, std::size_t bytes, const Stream& stream);
Status CopyOnDeviceAsync(void* device_dst, const void* device_src, std::size_t bytes,
                         const Stream& stream);
// Either side in host or device memory, the direction found from the addresses (unified addressing):
// for ranges that may lie in a caller's registered host memory or in its imported device memory.
Status CopyAnyAsync(void* dst, const void* src, std::size_t bytes, const Stream& stream);
// Sets `bytes` of device memory to zero.
Status ZeroAsync(void* device_dst, std::size_t bytes, const Stream& stream);

}  // namespace gpusort::kernels
