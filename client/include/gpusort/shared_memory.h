// Shared memory between a client and a gpusort server on the same host (RegisterRegion in sort.proto).
//
//   auto region = client.CreateSharedMemory(2 * keys_bytes);         // created, mapped, registered
//   std::memcpy(region->data(), keys, keys_bytes);                     // or build the keys there
//   auto info = client.SortInRegion(v1::DTYPE_FLOAT32, {},
//                                   region->Ref(0, keys_bytes),             // keys
//                                   region->Ref(keys_bytes, keys_bytes));   // sorted keys
//
// No array crosses the socket: the server's GPU copies straight from and into the region. The region is
// unregistered and removed when this object goes away (and by the server if this process dies).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "gpusort/v1/sort.grpc.pb.h"

namespace gpusort {

class SharedMemoryRegion {
 public:
  // Creates a POSIX shared-memory object of `bytes` named "/gpusort-<pid>-<n>", maps it and registers it
  // through `stub`. The registration is an open RegisterRegion call that this object holds; `prepare`
  // may add metadata to it (the bearer token), but no deadline: the call lasts as long as the region.
  static absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> Create(
      v1::SortService::Stub& stub, std::size_t bytes,
      const std::function<void(grpc::ClientContext&)>& prepare = nullptr);
  ~SharedMemoryRegion();  // cancels the registration, unmaps, unlinks
  SharedMemoryRegion(const SharedMemoryRegion&) = delete;
  SharedMemoryRegion& operator=(const SharedMemoryRegion&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::span<std::byte> bytes() const { return {data_, size_}; }
  const std::string& name() const { return name_; }
  const std::string& id() const { return id_; }  // the server's region_id
  v1::RegionRef Ref(std::size_t offset, std::size_t length) const;

 private:
  SharedMemoryRegion() = default;

  std::string name_, id_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1::RegisterRegionEvent>> registration_;
};

}  // namespace gpusort
