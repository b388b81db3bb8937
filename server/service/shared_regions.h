// The shared-memory regions callers registered (RegisterRegion in sort.proto): each one a POSIX
// shared-memory object mapped into the server and pinned by the backend once. Requests resolve a
// RegionRef into a checked range; a range keeps its region mapped until the request is done with it,
// even when the region is unregistered meanwhile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "gpusort/v1/sort.pb.h"
#include "server/backend/backend.h"

namespace gpusort {

class SharedRegion;

struct SharedRegionLimits {
  std::size_t max_regions = 64;                    // 0 turns shared memory off
  std::size_t max_total_bytes = std::size_t{16} << 30;  // mapped by all regions together
};

// A checked range of a region, valid while this object lives.
struct RegionRange {
  std::shared_ptr<const SharedRegion> region;
  std::span<std::byte> bytes;
};

class SharedRegions {
 public:
  SharedRegions(Backend& backend, SharedRegionLimits limits);
  ~SharedRegions();

  // Maps and pins `name` (shm_open name) for `size` bytes; returns its id. INVALID_ARGUMENT for a bad
  // name or size, NOT_FOUND when no such object exists, PERMISSION_DENIED when the server may not open
  // it, RESOURCE_EXHAUSTED past the limits.
  absl::StatusOr<std::string> Register(std::string_view name, std::uint64_t size);
  void Unregister(const std::string& id);

  // The range `ref` names, checked: a registered id, inside the region, starting at a multiple of
  // `alignment`, of exactly `length` bytes (the size the request implies), and the object still as
  // large as when it was mapped. `what` names the field in messages ("keys_region").
  absl::StatusOr<RegionRange> Resolve(const v1::RegionRef& ref, std::string_view what, std::size_t length,
                                      std::size_t alignment) const;

  std::size_t count() const;

 private:
  Backend& backend_;
  const SharedRegionLimits limits_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const SharedRegion>> regions_;
  std::size_t total_bytes_ = 0;
  std::uint64_t next_id_ = 1;
  std::mt19937_64 random_;
};

// Whether a gRPC peer string ("ipv4:127.0.0.1:5555", "ipv6:[::1]:5555", "unix:...") is on this host.
bool IsLocalPeer(std::string_view peer);

// Two ranges are the same range or do not overlap at all.
bool SameOrDisjoint(const RegionRange& a, const RegionRange& b);

}  // namespace gpusort
