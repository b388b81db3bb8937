#include "gpusort/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace gpusort {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(what + ": " + std::strerror(errno));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> SharedMemoryRegion::Create(
    v1::SortService::Stub& stub, std::size_t bytes, const std::function<void(grpc::ClientContext&)>& prepare) {
  static std::atomic<unsigned> counter{0};
  if (bytes == 0) return absl::InvalidArgumentError("a shared-memory region needs at least 1 byte");
  std::unique_ptr<SharedMemoryRegion> region(new SharedMemoryRegion());
  region->name_ = "/gpusort-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  // Owner-only permissions: the server must run as the same user to open it (see sort.proto).
  const int fd = shm_open(region->name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return Errno("shm_open " + region->name_);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    absl::Status s = Errno("ftruncate " + region->name_);
    close(fd);
    shm_unlink(region->name_.c_str());
    return s;
  }
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);  // the mapping keeps the object
  if (data == MAP_FAILED) {
    absl::Status s = Errno("mmap " + region->name_);
    shm_unlink(region->name_.c_str());
    return s;
  }
  region->data_ = static_cast<std::byte*>(data);
  region->size_ = bytes;

  v1::RegisterRegionRequest request;
  request.set_name(region->name_);
  request.set_size(bytes);
  if (prepare) prepare(region->context_);
  region->registration_ = stub.RegisterRegion(&region->context_, request);
  v1::RegisterRegionEvent event;
  if (!region->registration_->Read(&event)) {
    grpc::Status status = region->registration_->Finish();
    region->registration_.reset();
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        "registering shared memory: " + status.error_message());
  }
  region->id_ = event.region_id();
  return region;
}

SharedMemoryRegion::~SharedMemoryRegion() {
  if (registration_) {
    context_.TryCancel();  // this is how a region is unregistered
    (void)registration_->Finish();
  }
  if (data_) munmap(data_, size_);
  if (!name_.empty()) shm_unlink(name_.c_str());
}

v1::RegionRef SharedMemoryRegion::Ref(std::size_t offset, std::size_t length) const {
  v1::RegionRef ref;
  ref.set_region_id(id_);
  ref.set_offset(offset);
  ref.set_length(length);
  return ref;
}

}  // namespace gpusort
