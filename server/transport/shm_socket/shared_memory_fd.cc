#include "server/transport/shm_socket/shared_memory_fd.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "server/transport/shm_socket/caller_descriptor.h"

namespace gpusort {
namespace {

std::string Hex(unsigned long value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%lx", value);
  return text;
}

absl::Status CheckKind(int fd, const struct stat& st) {
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        "the descriptor is not a regular file (a pipe, socket or device?); register memory made with "
        "memfd_create");
  }
  struct statfs fs {};
  if (fstatfs(fd, &fs) != 0) {
    return absl::InvalidArgumentError(std::string("cannot inspect the descriptor's file system: ") +
                                      std::strerror(errno));
  }
  if (static_cast<unsigned long>(fs.f_type) == HUGETLBFS_MAGIC) {
    return absl::InvalidArgumentError(
        "hugetlbfs memory is refused: a huge page that cannot be had when it is first touched faults the "
        "server (SIGBUS); use an ordinary memfd");
  }
  if (static_cast<unsigned long>(fs.f_type) != TMPFS_MAGIC) {
    return absl::InvalidArgumentError("the descriptor is not shared memory (file system type " +
                                      Hex(static_cast<unsigned long>(fs.f_type)) +
                                      ", not tmpfs); register memory made with memfd_create");
  }
  return absl::OkStatus();
}

absl::Status CheckOpenedReadWrite(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0) {
    return absl::InvalidArgumentError(std::string("cannot read the descriptor's flags: ") + std::strerror(errno));
  }
  if ((flags & O_ACCMODE) != O_RDWR) {
    return absl::PermissionDeniedError(
        "the descriptor is not open for reading and writing; the server reads keys from the region and "
        "writes answers into it, so it takes only memory the caller itself may read and write");
  }
  return absl::OkStatus();
}

absl::Status CheckSeals(int fd) {
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return absl::FailedPreconditionError(
        "the memory is not sealed against shrinking: create it with memfd_create(MFD_ALLOW_SEALING) and "
        "add F_SEAL_SHRINK (fcntl F_ADD_SEALS) before registering, so that it cannot be cut under the "
        "server's mapping");
  }
  int write_seals = F_SEAL_WRITE;
#ifdef F_SEAL_FUTURE_WRITE
  write_seals |= F_SEAL_FUTURE_WRITE;
#endif
  if ((seals & write_seals) != 0) {
    return absl::FailedPreconditionError("the memory is sealed against writing; the server writes answers into it");
  }
  return absl::OkStatus();
}

}  // namespace

HostMapping::~HostMapping() { munmap(data_, size_); }

absl::StatusOr<std::unique_ptr<HostMapping>> MapSharedMemoryFd(int fd, std::uint64_t size) {
  if (size == 0) return absl::InvalidArgumentError("a region's size must be at least 1 byte");
  // Before anything else: fstat and fstatfs of a file on another file system (FUSE) may block for as
  // long as its daemon likes, and this runs on the thread that serves every caller's registration.
  if (KindOfCallerDescriptor(fd) != CallerDescriptorKind::kSharedMemory) {
    return absl::InvalidArgumentError(
        "the descriptor is not shared memory (not a memfd or tmpfs file: a pipe, socket, device or a file "
        "on another file system?); register memory made with memfd_create");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    return absl::InvalidArgumentError(std::string("cannot inspect the descriptor: ") + std::strerror(errno));
  }
  if (absl::Status s = CheckKind(fd, st); !s.ok()) return s;
  if (absl::Status s = CheckOpenedReadWrite(fd); !s.ok()) return s;
  if (absl::Status s = CheckSeals(fd); !s.ok()) return s;
  // The size is read again now that the seal is known to be there: read before, it might have been
  // cut between that read and the sealing. From here on it can only stay or grow.
  if (fstat(fd, &st) != 0) {
    return absl::InvalidArgumentError(std::string("cannot inspect the descriptor: ") + std::strerror(errno));
  }
  if (st.st_size < 0 || static_cast<std::uint64_t>(st.st_size) < size ||
      size > std::numeric_limits<std::size_t>::max()) {
    return absl::InvalidArgumentError("the memory holds " + std::to_string(st.st_size) + " bytes, fewer than the " +
                                      std::to_string(size) + " asked for");
  }
  // No MAP_POPULATE: with shrinking sealed and hugetlbfs refused no page can fault, so populating would
  // only move the allocation of every page into the registration (which one listener thread serves)
  // and charge memory the caller may never use; the backend's pin populates where it needs to.
  void* data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    const int err = errno;
    if (err == ENOMEM) return absl::ResourceExhaustedError("the server cannot map " + std::to_string(size) + " bytes");
    return absl::InvalidArgumentError(std::string("the server cannot map the memory: ") + std::strerror(err));
  }
  return std::make_unique<HostMapping>(static_cast<std::byte*>(data), static_cast<std::size_t>(size));
}

}  // namespace gpusort
