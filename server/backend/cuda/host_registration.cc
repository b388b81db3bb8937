#include "server/backend/cuda/host_registration.h"

#include "gpusort/kernels/memory.h"
#include "server/backend/cuda/kernel_status.h"

namespace gpusort {
namespace {

class RegisteredMemory final : public HostMemoryPin {
 public:
  explicit RegisteredMemory(kernels::HostRegistration registration) : registration_(std::move(registration)) {}

 private:
  kernels::HostRegistration registration_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HostMemoryPin>> PinForDevice(std::span<std::byte> memory) {
  kernels::HostRegistration registration;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::HostRegistration::Register(memory.data(), memory.size(), &registration),
                                 "registering shared memory with the GPU");
  return std::unique_ptr<HostMemoryPin>(new RegisteredMemory(std::move(registration)));
}

}  // namespace gpusort
