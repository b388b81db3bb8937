// Descriptors that callers hand the server (SCM_RIGHTS on the shared-memory socket) are the callers':
// any syscall on one may block for as long as its owner likes. fstat or close of a file on a FUSE mount
// waits for the FUSE daemon, which a local user runs; close of a TCP socket with SO_LINGER waits for its
// unsent data. A thread that serves more than one caller (the registration listener) must never make
// such a call (issue 41). So a descriptor is classified on arrival with calls that cannot block on it
// (fcntl F_GET_SEALS, the /proc link's text and the kernel's record of its mount), and one that is neither
// shared memory nor a CUDA memory handle is never looked at again: it is closed on a thread of its own
// (CloseAside).
#pragma once

#include <cstddef>

#include "server/core/unique_fd.h"

namespace gpusort {

enum class CallerDescriptorKind {
  kSharedMemory,        // a file that takes seals (memfd, tmpfs, hugetlbfs): nothing on it blocks
  kDeviceMemoryHandle,  // a driver object (/dev/nvidia* on devtmpfs or tmpfs, anon_inode:...): what CUDA
                        // exports memory as
  kOther,               // anything else: a file on any other file system, a socket, a pipe
};

// Which kind `fd` is. Makes no call that can wait on the descriptor's file system or its peer.
CallerDescriptorKind KindOfCallerDescriptor(int fd);

// Closes `fd` on the server's closing thread, not on the caller's: the close may block (FUSE flush,
// SO_LINGER), and that thread is never waited for, at shutdown either. Closes queue behind a blocked
// one; they only free descriptors, which the callers' limits already bound.
void CloseAside(UniqueFd fd);

// Descriptors handed to CloseAside and not yet closed (tests).
std::size_t DescriptorsClosingAside();

}  // namespace gpusort
