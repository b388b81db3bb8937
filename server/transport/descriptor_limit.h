// The process's descriptors as one budget (issue 41): every connection, region and file the server
// holds is one, and a process that runs out cannot accept, so each listener keeps its connections
// below its share of the limit, and the process starts with the most it may have.
#pragma once

#include <cstddef>

namespace gpusort {

// Raises the soft RLIMIT_NOFILE to the hard limit (what an unprivileged process may do) and logs both;
// returns the soft limit now in force. main() calls it before anything opens a descriptor.
std::size_t RaiseDescriptorLimit();

// The soft RLIMIT_NOFILE in force now.
std::size_t DescriptorLimit();

// Descriptors kept out of every share: room for one message's 253 descriptors (SCM_MAX_FD) to arrive
// whole however full the listeners are, for what waits to be closed past its share (a user's last
// message), the regions and the server's own files. When the kernel cannot install every descriptor of
// a message it releases the rest itself, on the receiving thread, and a caller's lingering socket
// among them froze the registration socket and held SIGTERM (issue 41's third attack session, at a
// limit of 256 with the listeners' shares full).
inline constexpr std::size_t kDescriptorReserve = 768;
// Below this limit the shares are too small to keep the promises (SECURITY.md); the server says so.
inline constexpr std::size_t kDescriptorsForThePromises = 2048;

// Each listener's share of `limit` less the reserve: the gRPC port three eighths of it, the data port and the
// shared-memory socket's call connections an eighth each, connections waiting to register and the
// descriptors callers handed over that wait to be closed (caller_descriptor.h) a sixteenth each, the
// health port a thirty-second, /metrics a sixty-fourth (at least 16 each). What is left (a fifth, and
// the reserve) is for regions, the GPU driver, files and the server's own sockets.
struct DescriptorShares {
  std::size_t grpc_connections;
  std::size_t health_connections;
  std::size_t data_connections;
  std::size_t shm_call_connections;
  std::size_t shm_pending_connections;
  std::size_t caller_descriptors_closing;
  std::size_t metrics_connections;
};
DescriptorShares SharesOf(std::size_t limit);

}  // namespace gpusort
