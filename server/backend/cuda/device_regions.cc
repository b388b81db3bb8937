#include "server/backend/cuda/device_regions.h"

#include "gpusort/kernels/shared_device_memory.h"
#include "server/backend/cuda/kernel_status.h"

namespace gpusort {
namespace {

class ImportedRegion final : public DeviceMemoryImport {
 public:
  explicit ImportedRegion(kernels::ImportedDeviceMemory memory) : memory_(std::move(memory)) {}
  std::span<std::byte> bytes() const override {
    return std::span(static_cast<std::byte*>(memory_.data()), memory_.size());
  }

 private:
  kernels::ImportedDeviceMemory memory_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceMemoryImport>> ImportForDevice(int fd, std::size_t bytes, int device) {
  kernels::ImportedDeviceMemory memory;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::ImportedDeviceMemory::Import(fd, bytes, device, &memory),
                                 "importing the device region");
  return std::unique_ptr<DeviceMemoryImport>(new ImportedRegion(std::move(memory)));
}

absl::StatusOr<int> HomeDeviceOf(int fd) {
  int device = -1;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::ImportedDeviceMemory::HomeDevice(fd, &device), "reading the device region's GPU");
  return device;
}

}  // namespace gpusort
