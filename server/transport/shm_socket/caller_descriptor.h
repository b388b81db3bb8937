// Descriptors that callers hand the server (SCM_RIGHTS on the shared-memory socket) are the callers':
// any syscall on one may block for as long as its owner likes. fstat or close of a file on a FUSE mount
// waits for the FUSE daemon, which a local user runs; close of a TCP socket with SO_LINGER waits for its
// unsent data. A thread that serves more than one caller (the registration listener) must never make
// such a call (issue 41). So a descriptor is classified on arrival with calls that cannot block on it
// (fcntl F_GET_SEALS, the /proc link's text and the kernel's record of its mount), and one that is neither
// shared memory nor a CUDA memory handle is never looked at again: a socket is closed in the closer
// process (closer_process.h), anything else on a thread of its user's own (CloseAside, closing_threads.h).
// So are the users' connections to the socket: closing one with unread messages makes the kernel release
// the descriptors in them, on the closing thread.
//
// A close that blocks holds up only its user's later closes, and what waits behind it is counted per
// user, so that the listener stops reading (and accepting) a user's descriptors while that user's
// count is past its share: a user who parks one lingering socket and then sends thousands of cheap
// descriptors fills its own share, not the process's descriptor table (issue 41's second attack
// session filled 8191 of 8192 so behind one closing thread).
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstring>

#include "server/core/unique_fd.h"

namespace gpusort {

// The most descriptors one message can carry (Linux's SCM_MAX_FD). Every receive makes room for all of
// them: a descriptor the kernel cannot install it releases itself, on the receiving thread.
inline constexpr std::size_t kMaxPassedDescriptors = 253;

// Calls `take(fd)` for each descriptor that a received message `msg` carried (SCM_RIGHTS), in order;
// each is the caller's to own from then on.
template <typename Take>
void ForEachPassedDescriptor(msghdr& msg, Take&& take) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      take(fd);
    }
  }
}

enum class CallerDescriptorKind {
  kSharedMemory,        // a file that takes seals (memfd, tmpfs, hugetlbfs): nothing on it blocks
  kDeviceMemoryHandle,  // a driver object (/dev/nvidia* on devtmpfs or tmpfs, anon_inode:...): what CUDA
                        // exports memory as
  kOther,               // anything else: a file on any other file system, a socket, a pipe
};

// Which kind `fd` is. Makes no call that can wait on the descriptor's file system or its peer.
CallerDescriptorKind KindOfCallerDescriptor(int fd);

// Closes `fd`, which user `owner` handed over, not on the caller's thread: the close may block (FUSE
// flush, SO_LINGER). A socket goes to the closer process when there is one; anything else (or a socket
// it cannot take now) to the user's closing thread, started when the user has something to close and
// ended when it has closed it all, never waited for, at shutdown either.
void CloseAside(uid_t owner, UniqueFd fd);

// Closes `owner`'s connection to the shared-memory socket the same way, after reading out whatever
// messages it still holds and closing the descriptors in them there (the reply sent just before is
// then read by the caller rather than lost to a reset).
void CloseConnectionAside(uid_t owner, UniqueFd connection);

// Descriptors handed to CloseAside or CloseConnectionAside and not yet closed on the server's closing
// threads (what the closer process holds is not the server's): all users', and one's.
std::size_t DescriptorsClosingAside();
std::size_t DescriptorsClosingAside(uid_t owner);

}  // namespace gpusort
