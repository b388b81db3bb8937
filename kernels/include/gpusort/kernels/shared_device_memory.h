// Device memory shared between processes of one node as a file descriptor (CUDA's virtual memory
// management: cuMemCreate with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, exported with
// cuMemExportToShareableHandle). The server imports what a caller exported (ImportedDeviceMemory); tests
// and callers make such memory with ExportableDeviceMemory.
//
// Why descriptors and not the legacy cudaIpcGetMemHandle handles: a legacy handle is 64 bytes anyone may
// copy, and an exporter that frees the memory while an importer uses it leaves the importer with
// undefined behaviour (CUDA's documentation of cudaIpcOpenMemHandle). An exported descriptor passes only
// through SCM_RIGHTS, as the host regions' memfds do, and the physical memory is reference-counted: an
// importer's mapping keeps it alive whatever the exporter frees or however it exits.
//
// The driver API is reached through the runtime (cudaGetDriverEntryPointByVersion), so that nothing
// here links libcuda: builds and CPU-only runs on machines without the driver keep working.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpusort/kernels/status.h"

namespace gpusort::kernels {

// An allocation handle mapped into this process for a device: released (unmapped, its addresses freed,
// the handle let go) when this goes. What both classes below hold.
class DeviceMapping {
 public:
  DeviceMapping() = default;
  DeviceMapping(std::uint64_t handle, std::uint64_t address, std::size_t mapped, std::size_t size)
      : handle_(handle), address_(address), mapped_(mapped), size_(size) {}
  ~DeviceMapping();
  DeviceMapping(DeviceMapping&& other) noexcept;
  DeviceMapping& operator=(DeviceMapping&& other) noexcept;
  DeviceMapping(const DeviceMapping&) = delete;
  DeviceMapping& operator=(const DeviceMapping&) = delete;

  void* data() const { return reinterpret_cast<void*>(address_); }
  std::size_t size() const { return size_; }
  std::uint64_t handle() const { return handle_; }

 private:
  std::uint64_t handle_ = 0;   // CUmemGenericAllocationHandle, 0 when empty
  std::uint64_t address_ = 0;  // CUdeviceptr of the mapping
  std::size_t mapped_ = 0;     // bytes mapped: size_ rounded up to the allocation granularity
  std::size_t size_ = 0;
};

class ImportedDeviceMemory {
 public:
  // Imports the allocation behind `fd` (not taken: the caller still closes it) and maps its first
  // `bytes` into this process for reading and writing by `device`. INVALID_ARGUMENT when `fd` is not an
  // exported CUDA allocation or the allocation is smaller than `bytes`; FAILED_PRECONDITION when the
  // allocation lives on another GPU that `device` cannot reach (no peer access between them).
  static Status Import(int fd, std::size_t bytes, int device, ImportedDeviceMemory* out);
  // The GPU the allocation behind `fd` lives on (not taken), without mapping it: where a server on
  // several GPUs imports it. INVALID_ARGUMENT as for Import.
  static Status HomeDevice(int fd, int* device);

  void* data() const { return mapping_.data(); }
  std::size_t size() const { return mapping_.size(); }

 private:
  DeviceMapping mapping_;
};

// Device memory on `device`, made exportable as a descriptor: what a caller of the server allocates
// (its keys and results), here for tests, benchmarks and the CLI's bench.
class ExportableDeviceMemory {
 public:
  static Status Allocate(std::size_t bytes, int device, ExportableDeviceMemory* out);
  // A new descriptor for the allocation, which the caller owns (and closes once it has been sent).
  Status ExportFd(int* fd) const;

  void* data() const { return mapping_.data(); }
  std::size_t size() const { return mapping_.size(); }

 private:
  DeviceMapping mapping_;
};

}  // namespace gpusort::kernels
