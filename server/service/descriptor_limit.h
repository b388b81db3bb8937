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

// Each listener's share of `limit`: the gRPC port three eighths of it, the data port and the
// shared-memory socket's call connections an eighth each, connections waiting to register and the
// descriptors callers handed over that wait to be closed (caller_descriptor.h) a sixteenth each, the
// health port a thirty-second, /metrics a sixty-fourth (at least 16 each). What is left (a fifth) is
// for regions, the GPU driver, files and the server's own sockets.
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
