// The shared-memory regions callers registered (sort.proto, "Shared memory"): memory each caller handed
// the server as a descriptor over the registration socket (region_socket_listener.h), mapped and
// pinned by the backend once. Requests resolve a RegionRef into a checked range; a range keeps its
// region mapped until the request is done with it, even when the region is unregistered meanwhile.
// Limits hold for the whole server and for each caller's user id.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "gpusort/v1/sort.pb.h"
#include "server/backend/backend.h"
#include "server/transport/shm_socket/shared_memory_fd.h"

namespace gpusort {

class SharedRegion;

struct SharedRegionLimits {
  std::size_t max_regions = 64;                         // 0 turns shared memory off
  std::size_t max_total_bytes = std::size_t{16} << 30;  // mapped by all regions together
};

// Who registers a region, and the share of the server's regions and bytes that user may hold at once
// (--shm-max-regions-per-user, --shm-max-bytes-per-user).
struct RegionOwner {
  uid_t uid = 0;
  std::size_t max_regions = 16;
  std::size_t max_bytes = std::size_t{4} << 30;
};

// A checked range of a region, valid while this object lives.
struct RegionRange {
  std::shared_ptr<const SharedRegion> region;
  std::span<std::byte> bytes;  // device addresses where on_device(): never touched by the host
  bool on_device() const;
};

class SharedRegions {
 public:
  SharedRegions(Backend& backend, SharedRegionLimits limits);
  ~SharedRegions();

  // Pins `memory` with the backend and registers it for `owner`; returns its id (region_id.h).
  // FAILED_PRECONDITION when shared memory is off, RESOURCE_EXHAUSTED past the server's or the owner's
  // limits, or the backend's error when pinning fails.
  absl::StatusOr<std::string> Register(std::unique_ptr<HostMapping> memory, const RegionOwner& owner);
  // Imports `size` bytes of the device memory behind `fd` (exported by the caller; still the caller's to
  // close) with the backend and registers it for `owner`: a device region, under the same limits.
  absl::StatusOr<std::string> RegisterDevice(int fd, std::size_t size, const RegionOwner& owner);
  void Unregister(const std::string& id);

  // The range `ref` names, checked: a registered id, inside the region, starting at a multiple of
  // `alignment`, of exactly `length` bytes (the size the request implies). `what` names the field in
  // messages ("keys_region").
  absl::StatusOr<RegionRange> Resolve(const v1::RegionRef& ref, std::string_view what, std::size_t length,
                                      std::size_t alignment) const;

  std::size_t count() const;

 private:
  struct Usage {
    std::size_t regions = 0;
    std::size_t bytes = 0;
  };
  // Takes room for `bytes` from the server's and the owner's limits, or says which limit is full.
  absl::Status Reserve(const RegionOwner& owner, std::size_t bytes);
  void Release(uid_t uid, std::size_t bytes);
  // Gives the region a fresh id (its room already reserved) and says so in the log.
  absl::StatusOr<std::string> Insert(std::shared_ptr<const SharedRegion> region, const RegionOwner& owner);

  Backend& backend_;
  const SharedRegionLimits limits_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const SharedRegion>> regions_;
  Usage total_;                      // registered and being registered
  std::map<uid_t, Usage> by_owner_;  // the same, per user id (entries with nothing held are erased)
};

// Whether a gRPC peer string ("ipv4:127.0.0.1:5555", "ipv6:[::1]:5555", "unix:...") is on this host.
bool IsLocalPeer(std::string_view peer);

// Two ranges are the same range or do not overlap at all.
bool SameOrDisjoint(const RegionRange& a, const RegionRange& b);

}  // namespace gpusort
