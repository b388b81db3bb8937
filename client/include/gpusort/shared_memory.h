// Shared memory between a client and a gpusort server on the same host (sort.proto, "Shared memory").
//
//   gpusort::Client client({.target = "localhost:50051", .shm_socket = "/run/gpusort/shm.sock"});
//   auto region = client.CreateSharedMemory(2 * keys_bytes);         // created, mapped, registered
//   std::memcpy(region->data(), keys, keys_bytes);                     // or build the keys there
//   auto info = client.SortInRegion(gpusort::client::DType::kFloat32, {}, gpusort::client::Payload::kNone,
//                                   region->Ref(0, keys_bytes),             // keys
//                                   region->Ref(keys_bytes, keys_bytes));   // sorted keys
//
// No array crosses the gRPC socket: the server reads and writes the region itself (on a GPU, by DMA). The
// memory is a memfd sealed against shrinking, handed to the server as a descriptor over its Unix socket
// (the server's --shm-socket), so the server can only ever reach memory this process holds. The region
// is unregistered when this object goes away (its socket connection closes), and by the server when
// this process dies.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "gpusort/types.h"

namespace gpusort {

// A registration: the open connection to the server's shared-memory socket that keeps one region
// registered, and the region's id. Closing the connection (destroying this) unregisters the region.
class SharedMemoryRegistration {
 public:
  // Hands `fd` (memory opened read-write and sealed with F_SEAL_SHRINK, as a memfd made with
  // MFD_ALLOW_SEALING) to the server listening on `socket_path` and registers its first `size` bytes.
  // `fd` stays the caller's. The server's refusal comes back with its code and reason; UNAVAILABLE when
  // the socket cannot be reached or answers nothing within `timeout`.
  static absl::StatusOr<std::unique_ptr<SharedMemoryRegistration>> Register(
      const std::string& socket_path, int fd, std::size_t size,
      std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // The same for device memory on this node (sort.proto, "Device memory"): `fd` is a CUDA allocation
  // exported as a POSIX descriptor (cuMemCreate with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, then
  // cuMemExportToShareableHandle); `size` bytes from its start become the region. `fd` stays the
  // caller's (it may be closed once this returns: the server holds the memory while registered).
  static absl::StatusOr<std::unique_ptr<SharedMemoryRegistration>> RegisterDeviceMemory(
      const std::string& socket_path, int fd, std::size_t size,
      std::chrono::milliseconds timeout = std::chrono::seconds(60));
  ~SharedMemoryRegistration();
  SharedMemoryRegistration(const SharedMemoryRegistration&) = delete;
  SharedMemoryRegistration& operator=(const SharedMemoryRegistration&) = delete;

  const std::string& id() const { return id_; }  // the server's region_id
  int connection() const { return connection_; }
  // A reference to [offset, offset + length) of the region, for SortInRegion and TopKInRegion.
  client::RegionRef Ref(std::size_t offset, std::size_t length) const;

 private:
  SharedMemoryRegistration(int connection, std::string id) : connection_(connection), id_(std::move(id)) {}
  int connection_;
  std::string id_;
};

class SharedMemoryRegion {
 public:
  // Creates a memfd of `bytes`, seals its size (F_SEAL_SHRINK | F_SEAL_GROW), maps it and registers it
  // with the server listening on `socket_path`.
  static absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> Create(
      const std::string& socket_path, std::size_t bytes,
      std::chrono::milliseconds timeout = std::chrono::seconds(60));
  ~SharedMemoryRegion();  // unregisters (closes the connection), unmaps, closes the memfd
  SharedMemoryRegion(const SharedMemoryRegion&) = delete;
  SharedMemoryRegion& operator=(const SharedMemoryRegion&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::span<std::byte> bytes() const { return {data_, size_}; }
  const std::string& id() const { return registration_->id(); }  // the server's region_id
  // The memfd, for handing the same memory to another process of this caller's own.
  int fd() const { return fd_; }
  client::RegionRef Ref(std::size_t offset, std::size_t length) const;

 private:
  SharedMemoryRegion() = default;

  int fd_ = -1;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::unique_ptr<SharedMemoryRegistration> registration_;
};

}  // namespace gpusort
