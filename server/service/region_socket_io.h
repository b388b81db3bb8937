// Reading and writing the registration socket's records (gpusort/v1/region_socket.h) on one connection:
// a whole SOCK_SEQPACKET message with every descriptor that came with it, and the fixed-size reply.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gpusort/v1/region_socket.h"
#include "server/core/unique_fd.h"

namespace gpusort {

struct IncomingMessage {
  bool closed = false;             // the caller closed its end (nothing else is set)
  std::vector<std::byte> bytes;    // at most the max_bytes asked for
  bool truncated = false;          // the message was longer than that
  std::vector<UniqueFd> fds;       // every descriptor attached, closed when this goes
  bool fds_truncated = false;      // more descriptors came than are read; the kernel closed the rest
};

// One message from `connection` (non-blocking): nullopt when none is there yet, closed = true at end of
// file, UNAVAILABLE when the socket failed (the connection is then of no more use). At most `max_bytes`
// of it are kept; a longer one is `truncated`.
absl::StatusOr<std::optional<IncomingMessage>> ReceiveMessage(int connection,
                                                              std::size_t max_bytes = v1::region_socket::kRequestBytes);

// The reply record: `code` a gRPC status code, `text` the region id or the reason. Never blocks and
// never raises SIGPIPE; a caller that went away simply misses it.
void SendReply(int connection, absl::StatusCode code, std::string_view text);

}  // namespace gpusort
