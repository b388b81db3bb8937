#include "gpusort/kernels/shared_device_memory.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/stat.h>

#include <mutex>
#include <string>
#include <utility>

#include "cuda_status.h"

namespace gpusort::kernels {
namespace {

// Makes `device` the calling thread's current GPU for the scope and puts the caller's back after, so
// that allocating or importing memory for one GPU leaves a caller working with another as it was.
class CurrentDeviceScope {
 public:
  CurrentDeviceScope() { had_ = cudaGetDevice(&previous_) == cudaSuccess; }
  ~CurrentDeviceScope() {
    if (had_) cudaSetDevice(previous_);
  }
  CurrentDeviceScope(const CurrentDeviceScope&) = delete;
  CurrentDeviceScope& operator=(const CurrentDeviceScope&) = delete;

 private:
  int previous_ = 0;
  bool had_ = false;
};

// The driver functions used here, looked up once through the runtime (see the header for why).
struct DriverApi {
  CUresult (*mem_create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long);
  CUresult (*mem_release)(CUmemGenericAllocationHandle);
  CUresult (*mem_address_reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
  CUresult (*mem_address_free)(CUdeviceptr, size_t);
  CUresult (*mem_map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
  CUresult (*mem_unmap)(CUdeviceptr, size_t);
  CUresult (*mem_set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t);
  CUresult (*mem_granularity)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags);
  CUresult (*mem_properties)(CUmemAllocationProp*, CUmemGenericAllocationHandle);
  CUresult (*mem_export)(void*, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long);
  CUresult (*mem_import)(CUmemGenericAllocationHandle*, void*, CUmemAllocationHandleType);
  CUresult (*error_name)(CUresult, const char**);
};

template <typename Fn>
bool Find(const char* symbol, Fn* fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || p == nullptr) {
    return false;
  }
  *fn = reinterpret_cast<Fn>(p);
  return true;
}

// nullptr when the driver lacks any of them (no driver, or one older than CUDA 12).
const DriverApi* Driver() {
  static DriverApi api;
  static bool ok = false;
  static std::once_flag once;
  std::call_once(once, [] {
    ok = Find("cuMemCreate", &api.mem_create) && Find("cuMemRelease", &api.mem_release) &&
         Find("cuMemAddressReserve", &api.mem_address_reserve) && Find("cuMemAddressFree", &api.mem_address_free) &&
         Find("cuMemMap", &api.mem_map) && Find("cuMemUnmap", &api.mem_unmap) &&
         Find("cuMemSetAccess", &api.mem_set_access) &&
         Find("cuMemGetAllocationGranularity", &api.mem_granularity) &&
         Find("cuMemGetAllocationPropertiesFromHandle", &api.mem_properties) &&
         Find("cuMemExportToShareableHandle", &api.mem_export) &&
         Find("cuMemImportFromShareableHandle", &api.mem_import) && Find("cuGetErrorName", &api.error_name);
  });
  return ok ? &api : nullptr;
}

Status DriverError(StatusCode code, CUresult result, const std::string& what) {
  const char* name = "unknown CUresult";
  if (const DriverApi* api = Driver(); api != nullptr) api->error_name(result, &name);
  return Status(code, what + " (" + name + ")");
}

Status NoDriver() {
  return Status(StatusCode::kUnavailable, "the CUDA driver offers no virtual memory management (CUDA 12 or later)");
}

std::size_t RoundUp(std::size_t bytes, std::size_t granularity) {
  return (bytes + granularity - 1) / granularity * granularity;
}

CUmemAccessDesc ReadWriteFor(int device) {
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return access;
}

// Reserves `bytes` of addresses, maps `handle` there and lets `device` read and write it. On failure
// undoes what it did, releases the handle too, and says which step failed.
Status MapFor(const DriverApi& api, CUmemGenericAllocationHandle handle, std::size_t bytes, int device,
              CUdeviceptr* address, StatusCode map_code, const char* map_what, StatusCode access_code,
              const std::string& access_what) {
  CUdeviceptr ptr = 0;
  Status status = Status::Ok();
  if (CUresult r = api.mem_address_reserve(&ptr, bytes, 0, 0, 0); r != CUDA_SUCCESS) {
    status = DriverError(StatusCode::kOutOfMemory, r, "reserving device addresses");
  } else if (CUresult r = api.mem_map(ptr, bytes, 0, handle, 0); r != CUDA_SUCCESS) {
    api.mem_address_free(ptr, bytes);
    status = DriverError(map_code, r, map_what);
  } else {
    const CUmemAccessDesc access = ReadWriteFor(device);
    if (CUresult r = api.mem_set_access(ptr, bytes, &access, 1); r != CUDA_SUCCESS) {
      api.mem_unmap(ptr, bytes);
      api.mem_address_free(ptr, bytes);
      status = DriverError(access_code, r, access_what);
    }
  }
  if (!status.ok()) {
    api.mem_release(handle);
    return status;
  }
  *address = ptr;
  return Status::Ok();
}

}  // namespace

// ---- DeviceMapping
DeviceMapping::~DeviceMapping() {
  const DriverApi* api = Driver();
  if (api == nullptr || handle_ == 0) return;
  if (address_ != 0) {
    api->mem_unmap(address_, mapped_);
    api->mem_address_free(address_, mapped_);
  }
  api->mem_release(handle_);
}

DeviceMapping::DeviceMapping(DeviceMapping&& other) noexcept
    : handle_(std::exchange(other.handle_, 0)),
      address_(std::exchange(other.address_, 0)),
      mapped_(std::exchange(other.mapped_, 0)),
      size_(std::exchange(other.size_, 0)) {}

DeviceMapping& DeviceMapping::operator=(DeviceMapping&& other) noexcept {
  std::swap(handle_, other.handle_);
  std::swap(address_, other.address_);
  std::swap(mapped_, other.mapped_);
  std::swap(size_, other.size_);
  return *this;
}

// ---- ImportedDeviceMemory
namespace {

// The allocation handle behind `fd` (not taken), for Import and HomeDevice. The driver judges the
// descriptor; plain files, pipes, sockets and directories are refused before it sees them.
Status ImportHandle(const DriverApi& api, int fd, CUmemGenericAllocationHandle* handle) {
  struct stat st{};
  if (fstat(fd, &st) != 0 || S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ||
      S_ISDIR(st.st_mode)) {
    return Status(StatusCode::kInvalidArgument,
                  "the descriptor is not CUDA device memory exported with cuMemExportToShareableHandle");
  }
  if (CUresult r = api.mem_import(handle, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      r != CUDA_SUCCESS) {
    return DriverError(StatusCode::kInvalidArgument, r,
                       "the descriptor is not CUDA device memory exported with cuMemExportToShareableHandle");
  }
  return Status::Ok();
}

}  // namespace

Status ImportedDeviceMemory::Import(int fd, std::size_t bytes, int device, ImportedDeviceMemory* out) {
  if (bytes == 0) return Status(StatusCode::kInvalidArgument, "a device region has at least one byte");
  const DriverApi* api = Driver();
  if (api == nullptr) return NoDriver();
  const CurrentDeviceScope scope;
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  CUmemGenericAllocationHandle handle = 0;
  if (Status imported = ImportHandle(*api, fd, &handle); !imported.ok()) return imported;
  CUmemAllocationProp prop{};
  std::size_t granularity = 0;
  if (CUresult r = api->mem_properties(&prop, handle); r != CUDA_SUCCESS) {
    api->mem_release(handle);
    return DriverError(StatusCode::kInvalidArgument, r, "reading the exported allocation's properties");
  }
  if (CUresult r = api->mem_granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
      r != CUDA_SUCCESS || granularity == 0) {
    api->mem_release(handle);
    return DriverError(StatusCode::kInvalidArgument, r, "reading the exported allocation's granularity");
  }
  const int home = prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop.location.id : -1;
  const std::size_t mapped = RoundUp(bytes, granularity);
  CUdeviceptr address = 0;
  const Status mapping = MapFor(*api, handle, mapped, device, &address, StatusCode::kInvalidArgument,
                                "mapping the exported memory: it is smaller than the size asked",
                                StatusCode::kFailedPrecondition,
                                "GPU " + std::to_string(device) + " cannot reach the memory, which lives on GPU " +
                                    std::to_string(home) + " (no peer access between them)");
  if (!mapping.ok()) return mapping;
  out->mapping_ = DeviceMapping(handle, address, mapped, bytes);
  return Status::Ok();
}

Status ImportedDeviceMemory::HomeDevice(int fd, int* device) {
  const DriverApi* api = Driver();
  if (api == nullptr) return NoDriver();
  CUmemGenericAllocationHandle handle = 0;
  if (Status imported = ImportHandle(*api, fd, &handle); !imported.ok()) return imported;
  CUmemAllocationProp prop{};
  const CUresult r = api->mem_properties(&prop, handle);
  api->mem_release(handle);
  if (r != CUDA_SUCCESS) return DriverError(StatusCode::kInvalidArgument, r, "reading the exported allocation's properties");
  if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return Status(StatusCode::kInvalidArgument, "the exported allocation is not device memory");
  }
  *device = prop.location.id;
  return Status::Ok();
}

// ---- ExportableDeviceMemory
Status ExportableDeviceMemory::Allocate(std::size_t bytes, int device, ExportableDeviceMemory* out) {
  if (bytes == 0) return Status(StatusCode::kInvalidArgument, "allocate at least one byte");
  const DriverApi* api = Driver();
  if (api == nullptr) return NoDriver();
  const CurrentDeviceScope scope;
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  std::size_t granularity = 0;
  if (CUresult r = api->mem_granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM); r != CUDA_SUCCESS) {
    return DriverError(StatusCode::kInternal, r, "reading the allocation granularity");
  }
  const std::size_t mapped = RoundUp(bytes, granularity);
  CUmemGenericAllocationHandle handle = 0;
  if (CUresult r = api->mem_create(&handle, mapped, &prop, 0); r != CUDA_SUCCESS) {
    return DriverError(StatusCode::kOutOfMemory, r, "allocating exportable device memory");
  }
  CUdeviceptr address = 0;
  const Status mapping = MapFor(*api, handle, mapped, device, &address, StatusCode::kInternal,
                                "mapping the new allocation", StatusCode::kInternal, "granting access to it");
  if (!mapping.ok()) return mapping;
  out->mapping_ = DeviceMapping(handle, address, mapped, bytes);
  return Status::Ok();
}

Status ExportableDeviceMemory::ExportFd(int* fd) const {
  const DriverApi* api = Driver();
  if (api == nullptr) return NoDriver();
  if (mapping_.handle() == 0) return Status(StatusCode::kFailedPrecondition, "nothing allocated to export");
  int exported = -1;
  if (CUresult r = api->mem_export(&exported, mapping_.handle(), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
      r != CUDA_SUCCESS) {
    return DriverError(StatusCode::kInternal, r, "exporting the allocation as a descriptor");
  }
  *fd = exported;
  return Status::Ok();
}

}  // namespace gpusort::kernels
