// A connection to the server's shared-memory socket (its --shm-socket): what registering a region
// (shared_memory.cc) and sending calls on the socket (region_call_connections.cc) both open first.
// Private to the client library.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace gpusort::client_internal {

// A connected SOCK_SEQPACKET descriptor (close-on-exec), the caller's to close. INVALID_ARGUMENT for a
// path that does not fit a Unix socket address, UNAVAILABLE when nothing listens there.
absl::StatusOr<int> ConnectToShmSocket(const std::string& path);

}  // namespace gpusort::client_internal
