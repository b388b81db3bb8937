#include "server/service/shared_regions.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <spdlog/spdlog.h>

namespace gpusort {

// One mapped object. The pin goes before the mapping, the mapping before the descriptor.
class SharedRegion {
 public:
  SharedRegion(std::string name, int fd, std::byte* data, std::size_t size)
      : name_(std::move(name)), fd_(fd), data_(data), size_(size) {}
  ~SharedRegion() {
    pin_.reset();
    munmap(data_, size_);
    close(fd_);
  }
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  void set_pin(std::unique_ptr<HostMemoryPin> pin) { pin_ = std::move(pin); }
  const std::string& name() const { return name_; }
  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

  // Touching a page past the object's end raises SIGBUS, so a region whose owner shrank the object is
  // refused. (An owner who shrinks it during a request can still fault the server; the CUDA path's DMA
  // from pinned pages cannot, but the CPU path reads the pages. Callers are trusted same-host services.)
  absl::Status CheckStillWhole() const {
    struct stat st {};
    if (fstat(fd_, &st) != 0 || static_cast<std::size_t>(st.st_size) < size_) {
      return absl::FailedPreconditionError("shared-memory object " + name_ + " is now smaller than the " +
                                           std::to_string(size_) + " bytes registered; register it again");
    }
    return absl::OkStatus();
  }

 private:
  std::string name_;
  int fd_;
  std::byte* data_;
  std::size_t size_;
  std::unique_ptr<HostMemoryPin> pin_;
};

namespace {

bool ValidName(std::string_view name) {
  if (name.size() < 2 || name.size() > 251 || name[0] != '/') return false;
  for (char c : name.substr(1)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return name != "/." && name != "/..";
}

}  // namespace

SharedRegions::SharedRegions(Backend& backend, SharedRegionLimits limits)
    : backend_(backend), limits_(limits), random_(std::random_device{}()) {}
SharedRegions::~SharedRegions() = default;

absl::StatusOr<std::string> SharedRegions::Register(std::string_view name_view, std::uint64_t size) {
  const std::string name(name_view);
  if (limits_.max_regions == 0) {
    return absl::FailedPreconditionError("shared memory is off on this server (--shm-max-regions 0)");
  }
  if (!ValidName(name)) {
    return absl::InvalidArgumentError("shared-memory name '" + name +
                                      "' is not '/' followed by 1 to 250 of [A-Za-z0-9._-]");
  }
  if (size == 0) return absl::InvalidArgumentError("a region's size must be at least 1 byte");
  {
    std::lock_guard lock(mutex_);
    if (regions_.size() >= limits_.max_regions) {
      return absl::ResourceExhaustedError("the server holds its limit of " + std::to_string(limits_.max_regions) +
                                          " shared-memory regions (--shm-max-regions)");
    }
    if (size > limits_.max_total_bytes - std::min(total_bytes_, limits_.max_total_bytes)) {
      return absl::ResourceExhaustedError("registering " + std::to_string(size) + " bytes would pass the limit of " +
                                          std::to_string(limits_.max_total_bytes) +
                                          " bytes of shared memory (--shm-max-bytes)");
    }
  }
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError("no shared-memory object named " + name);
    if (err == EACCES) return absl::PermissionDeniedError("the server may not open " + name + " read-write");
    return absl::InvalidArgumentError("cannot open " + name + ": " + std::strerror(err));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < size) {
    close(fd);
    return absl::InvalidArgumentError("shared-memory object " + name + " holds " + std::to_string(st.st_size) +
                                      " bytes, fewer than the " + std::to_string(size) + " asked for");
  }
  void* data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    const int err = errno;
    close(fd);
    return absl::ResourceExhaustedError("cannot map " + name + ": " + std::strerror(err));
  }
  auto region = std::make_shared<SharedRegion>(name, fd, static_cast<std::byte*>(data), size);
  auto pin = backend_.PinHostMemory(std::span(region->data(), size));
  if (!pin.ok()) return pin.status();
  region->set_pin(std::move(*pin));

  std::lock_guard lock(mutex_);
  // Checked again: another registration may have taken the room while this one was mapping.
  if (regions_.size() >= limits_.max_regions || size > limits_.max_total_bytes - total_bytes_) {
    return absl::ResourceExhaustedError("shared-memory limits reached while registering " + name);
  }
  // Unguessable ids, so that one caller cannot name another's region by counting.
  char id_bytes[40];
  std::snprintf(id_bytes, sizeof(id_bytes), "region-%llu-%016llx", static_cast<unsigned long long>(next_id_++),
                static_cast<unsigned long long>(random_()));
  std::string id = id_bytes;
  regions_.emplace(id, std::move(region));
  total_bytes_ += size;
  spdlog::info("registered shared memory {} as {} ({} bytes)", name, id, size);
  return id;
}

void SharedRegions::Unregister(const std::string& id) {
  std::shared_ptr<const SharedRegion> region;
  {
    std::lock_guard lock(mutex_);
    auto it = regions_.find(id);
    if (it == regions_.end()) return;
    region = std::move(it->second);
    regions_.erase(it);
    total_bytes_ -= region->size();
  }
  spdlog::info("unregistered shared memory {} ({})", region->name(), id);
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
      return absl::InvalidArgumentError(what + " names region '" + ref.region_id() +
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
  absl::Status whole = region->CheckStillWhole();
  if (!whole.ok()) return whole;
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
