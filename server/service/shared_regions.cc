#include "server/service/shared_regions.h"

#include <spdlog/spdlog.h>

#include "server/core/caller_text.h"
#include "server/service/region_id.h"

namespace gpusort {

// One registered region. The pin goes before the mapping.
// Host memory (mapped, and pinned by the backend) or device memory (imported by the backend).
class SharedRegion {
 public:
  SharedRegion(std::unique_ptr<HostMapping> memory, std::unique_ptr<HostMemoryPin> pin, uid_t owner)
      : bytes_(memory->data(), memory->size()), memory_(std::move(memory)), pin_(std::move(pin)), owner_(owner) {}
  SharedRegion(std::unique_ptr<DeviceMemoryImport> device, uid_t owner)
      : bytes_(device->bytes()), device_(std::move(device)), owner_(owner) {}
  ~SharedRegion() {
    pin_.reset();  // unpinned before it is unmapped
    device_.reset();
  }
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  std::byte* data() const { return bytes_.data(); }
  std::size_t size() const { return bytes_.size(); }
  bool on_device() const { return device_ != nullptr; }
  uid_t owner() const { return owner_; }

 private:
  std::span<std::byte> bytes_;
  std::unique_ptr<HostMapping> memory_;
  std::unique_ptr<HostMemoryPin> pin_;
  std::unique_ptr<DeviceMemoryImport> device_;
  uid_t owner_;
};

bool RegionRange::on_device() const { return region != nullptr && region->on_device(); }

SharedRegions::SharedRegions(Backend& backend, SharedRegionLimits limits) : backend_(backend), limits_(limits) {}
SharedRegions::~SharedRegions() = default;

absl::Status SharedRegions::Reserve(const RegionOwner& owner, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  if (total_.regions >= limits_.max_regions) {
    return absl::ResourceExhaustedError("the server holds its limit of " + std::to_string(limits_.max_regions) +
                                        " shared-memory regions (--shm-max-regions)");
  }
  if (bytes > limits_.max_total_bytes - total_.bytes) {
    return absl::ResourceExhaustedError("registering " + std::to_string(bytes) + " bytes would pass the limit of " +
                                        std::to_string(limits_.max_total_bytes) +
                                        " bytes of shared memory (--shm-max-bytes)");
  }
  Usage& mine = by_owner_[owner.uid];
  if (mine.regions >= owner.max_regions || bytes > owner.max_bytes - std::min(mine.bytes, owner.max_bytes)) {
    const bool regions_full = mine.regions >= owner.max_regions;
    if (mine.regions == 0) by_owner_.erase(owner.uid);
    if (regions_full) {
      return absl::ResourceExhaustedError("user " + std::to_string(owner.uid) + " holds its limit of " +
                                          std::to_string(owner.max_regions) +
                                          " shared-memory regions (--shm-max-regions-per-user)");
    }
    return absl::ResourceExhaustedError("registering " + std::to_string(bytes) + " bytes would pass user " +
                                        std::to_string(owner.uid) + "'s limit of " + std::to_string(owner.max_bytes) +
                                        " bytes of shared memory (--shm-max-bytes-per-user)");
  }
  ++mine.regions;
  mine.bytes += bytes;
  ++total_.regions;
  total_.bytes += bytes;
  return absl::OkStatus();
}

void SharedRegions::Release(uid_t uid, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  --total_.regions;
  total_.bytes -= bytes;
  auto it = by_owner_.find(uid);
  if (it == by_owner_.end()) return;
  --it->second.regions;
  it->second.bytes -= bytes;
  if (it->second.regions == 0) by_owner_.erase(it);
}

absl::StatusOr<std::string> SharedRegions::Register(std::unique_ptr<HostMapping> memory, const RegionOwner& owner) {
  if (limits_.max_regions == 0) {
    return absl::FailedPreconditionError("shared memory is off on this server (--shm-max-regions 0)");
  }
  const std::size_t size = memory->size();
  // Room is taken before pinning (which may take milliseconds), so that registrations running side by
  // side can never pass a limit together.
  if (absl::Status s = Reserve(owner, size); !s.ok()) return s;
  auto pin = backend_.PinHostMemory(std::span(memory->data(), size));
  if (!pin.ok()) {
    Release(owner.uid, size);
    return pin.status();
  }
  return Insert(std::make_shared<SharedRegion>(std::move(memory), std::move(*pin), owner.uid), owner);
}

absl::StatusOr<std::string> SharedRegions::RegisterDevice(int fd, std::size_t size, const RegionOwner& owner) {
  if (limits_.max_regions == 0) {
    return absl::FailedPreconditionError("shared memory is off on this server (--shm-max-regions 0)");
  }
  if (size == 0) return absl::InvalidArgumentError("a region has at least one byte");
  if (absl::Status s = Reserve(owner, size); !s.ok()) return s;
  auto device = backend_.ImportDeviceMemory(fd, size);
  if (!device.ok()) {
    Release(owner.uid, size);
    return device.status();
  }
  return Insert(std::make_shared<SharedRegion>(*std::move(device), owner.uid), owner);
}

absl::StatusOr<std::string> SharedRegions::Insert(std::shared_ptr<const SharedRegion> region, const RegionOwner& owner) {
  const std::size_t size = region->size();
  for (;;) {
    absl::StatusOr<std::string> id = NewRegionId();
    if (!id.ok()) {
      Release(owner.uid, size);
      return id.status();
    }
    bool inserted = false;
    {
      std::lock_guard lock(mutex_);
      inserted = regions_.emplace(*id, region).second;
    }
    if (inserted) {
      spdlog::info("registered {} {} of user {} ({} bytes)", region->on_device() ? "device memory" : "shared memory",
                   RegionIdForLog(*id), owner.uid, size);
      return id;
    }
    // A repeat of 128 random bits will not happen, but ruling it out costs nothing.
  }
}

void SharedRegions::Unregister(const std::string& id) {
  std::shared_ptr<const SharedRegion> region;
  {
    std::lock_guard lock(mutex_);
    auto it = regions_.find(id);
    if (it == regions_.end()) return;
    region = std::move(it->second);
    regions_.erase(it);
  }
  Release(region->owner(), region->size());
  spdlog::info("unregistered shared memory {} of user {}", RegionIdForLog(id), region->owner());
  // Unmapped here, or when the last request using it lets go.
}

absl::StatusOr<RegionRange> SharedRegions::Resolve(const v1::RegionRef& ref, std::string_view what_view,
                                                   std::size_t length, std::size_t alignment) const {
  const std::string what(what_view);
  std::shared_ptr<const SharedRegion> region;
  {
    std::lock_guard lock(mutex_);
    auto it = regions_.find(ref.region_id());
    if (it == regions_.end()) {
      return absl::InvalidArgumentError(what + " names region '" + CallerText(ref.region_id()) +
                                        "', which is not registered (or was unregistered)");
    }
    region = it->second;
  }
  if (ref.length() != length) {
    return absl::InvalidArgumentError(what + " is " + std::to_string(ref.length()) + " bytes long; this request needs " +
                                      std::to_string(length));
  }
  if (ref.offset() > region->size() || ref.length() > region->size() - ref.offset()) {
    return absl::InvalidArgumentError(what + " [" + std::to_string(ref.offset()) + ", +" +
                                      std::to_string(ref.length()) + ") runs past the end of its " +
                                      std::to_string(region->size()) + "-byte region");
  }
  if (alignment > 1 && ref.offset() % alignment != 0) {
    return absl::InvalidArgumentError(what + " starts at offset " + std::to_string(ref.offset()) +
                                      ", not a multiple of its " + std::to_string(alignment) + "-byte elements");
  }
  RegionRange range;
  range.bytes = std::span(region->data() + ref.offset(), ref.length());
  range.region = std::move(region);
  return range;
}

std::size_t SharedRegions::count() const {
  std::lock_guard lock(mutex_);
  return regions_.size();
}

bool IsLocalPeer(std::string_view peer) {
  return peer.starts_with("unix:") || peer.starts_with("ipv4:127.") || peer.starts_with("ipv6:[::1]") ||
         peer.starts_with("ipv6:%5B::1%5D");
}

bool SameOrDisjoint(const RegionRange& a, const RegionRange& b) {
  if (a.bytes.empty() || b.bytes.empty()) return true;
  if (a.bytes.data() == b.bytes.data() && a.bytes.size() == b.bytes.size()) return true;
  // Ranges of different regions may still be the same memory (one object registered twice); compare
  // addresses within this process only when they share the region, else assume the caller's mappings
  // are distinct objects.
  if (a.region != b.region) return true;
  const std::byte* a_end = a.bytes.data() + a.bytes.size();
  const std::byte* b_end = b.bytes.data() + b.bytes.size();
  return a_end <= b.bytes.data() || b_end <= a.bytes.data();
}

}  // namespace gpusort
