#include "server/transport/shm_socket/region_registration.h"

#include "gpusort/v1/region_socket.h"
#include "server/transport/shm_socket/shared_memory_fd.h"

namespace gpusort {

absl::StatusOr<std::string> RegisterFromMessage(const IncomingMessage& message, const RegionOwner& owner,
                                                SharedRegions& regions) {
  namespace wire = v1::region_socket;
  const auto request = message.truncated ? std::nullopt : wire::DecodeRequest(message.bytes);
  if (!request.has_value()) {
    return absl::InvalidArgumentError("not a registration request: expected one " +
                                      std::to_string(wire::kRequestBytes) +
                                      "-byte record starting with \"GSRQ\" (sort.proto, \"Shared memory\")");
  }
  if (request->version != wire::kVersion) {
    return absl::InvalidArgumentError("registration protocol version " + std::to_string(request->version) +
                                      " is not spoken here; this server speaks version " +
                                      std::to_string(wire::kVersion));
  }
  if (!request->reserved_zero) return absl::InvalidArgumentError("the request's reserved bytes must be zero");
  const bool device = request->kind == static_cast<std::uint16_t>(wire::RegionKind::kDeviceMemory);
  if (request->kind != static_cast<std::uint16_t>(wire::RegionKind::kHostMemory) && !device) {
    return absl::UnimplementedError("region kind " + std::to_string(request->kind) +
                                    " is not offered; kinds 1 (host memory, a sealed memfd) and 2 (device memory, "
                                    "exported by cuMemExportToShareableHandle) are");
  }
  if (message.fds.size() != 1 || message.fds_truncated) {
    return absl::InvalidArgumentError("a registration carries exactly one descriptor (SCM_RIGHTS); this one carried " +
                                      std::string(message.fds_truncated ? "more than " : "") +
                                      std::to_string(message.fds.size()));
  }
  // A descriptor of any other kind was closed on arrival, unlooked at (caller_descriptor.h); for host
  // memory MapSharedMemoryFd says so.
  if (device && message.fd_kinds.front() == CallerDescriptorKind::kOther) {
    return absl::InvalidArgumentError(
        "the descriptor is not CUDA device memory (not a descriptor of the NVIDIA driver); export it with "
        "cuMemExportToShareableHandle");
  }
  if (device) return regions.RegisterDevice(message.fds.front().get(), request->size, owner);
  absl::StatusOr<std::unique_ptr<HostMapping>> memory = MapSharedMemoryFd(message.fds.front().get(), request->size);
  if (!memory.ok()) return memory.status();
  return regions.Register(*std::move(memory), owner);
}

}  // namespace gpusort
