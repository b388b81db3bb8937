// A memfd mapping registered with CUDA: the host end of a shared-memory caller's region, as the server
// copies to and from it (duplex_floor, split_upload_probe).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>

#include "gpusort/kernels/memory.h"

namespace gpusort {

class MemfdRegion {
 public:
  MemfdRegion() = default;
  MemfdRegion(const MemfdRegion&) = delete;
  MemfdRegion& operator=(const MemfdRegion&) = delete;
  ~MemfdRegion() {
    registration_ = kernels::HostRegistration();
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  bool Create(std::size_t bytes) {
    const int fd = memfd_create("gpusort-bench", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) return false;
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return false;
    data_ = p;
    bytes_ = bytes;
    std::fill_n(static_cast<unsigned char*>(p), bytes, 1);  // the pages exist, as a caller's written keys
    return kernels::HostRegistration::Register(p, bytes, &registration_).ok();
  }
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  kernels::HostRegistration registration_;
};

}  // namespace gpusort
