// A caller's shared-memory descriptor, checked and mapped (sort.proto, "Shared memory"). The server
// maps only memory that it cannot be made to fault on and that the caller itself may write:
//   - a regular file on tmpfs (a memfd): anything else (a pipe, a socket, a file on disk) is refused;
//     hugetlbfs too, because a huge page that cannot be had when it is first touched is SIGBUS;
//   - opened read-write: the kernel checked the caller's own rights when it opened or created it,
//     so a descriptor the caller could only get read-only cannot be turned into writes by the server;
//   - sealed against shrinking (F_SEAL_SHRINK): from then on nobody, the owner included, can cut the
//     object under the mapping, which is what made a page past the end raise SIGBUS in the server;
//   - not sealed against writing (the server writes the answers), and at least `size` bytes long.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"

namespace gpusort {

// The server's shared read-write mapping of a caller's memory; unmapped when it goes.
class HostMapping {
 public:
  HostMapping(std::byte* data, std::size_t size) : data_(data), size_(size) {}
  ~HostMapping();
  HostMapping(const HostMapping&) = delete;
  HostMapping& operator=(const HostMapping&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::byte* data_;
  std::size_t size_;
};

// Checks `fd` as above and maps its first `size` bytes. The descriptor stays the caller's to close (the
// mapping holds the memory by itself). INVALID_ARGUMENT: not shared memory, hugetlbfs, size 0 or past
// the end; PERMISSION_DENIED: not opened read-write; FAILED_PRECONDITION: not sealed against
// shrinking, or sealed against writing; RESOURCE_EXHAUSTED: the mapping itself failed for lack of memory.
absl::StatusOr<std::unique_ptr<HostMapping>> MapSharedMemoryFd(int fd, std::uint64_t size);

}  // namespace gpusort
