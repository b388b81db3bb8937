// Reading and writing the registration socket's records (gpusort/v1/region_socket.h) on one connection:
// a whole SOCK_SEQPACKET message with every descriptor that came with it, and the fixed-size reply.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gpusort/v1/region_socket.h"
#include "server/core/unique_fd.h"
#include "server/transport/shm_socket/caller_descriptor.h"

namespace gpusort {

struct IncomingMessage {
  bool closed = false;             // the caller closed its end (nothing else is set)
  std::vector<std::byte> bytes;    // at most the max_bytes asked for
  bool truncated = false;          // the message was longer than that
  // Every descriptor attached, in order, with its kind. Only shared memory and device memory handles
  // are kept (closed when this goes); any other kind is already on its way to CloseAside (its sender's
  // closing thread), its entry in `fds` invalid, so that nothing on this thread can block on it.
  std::vector<UniqueFd> fds;
  std::vector<CallerDescriptorKind> fd_kinds;
  bool fds_truncated = false;      // more descriptors came than one message can carry (never on Linux)
};

// One message from `connection`, a connection of user `sender`'s (non-blocking): nullopt when none is there yet, closed = true at end of
// file, UNAVAILABLE when the socket failed (the connection is then of no more use). At most `max_bytes`
// of it are kept; a longer one is `truncated`.
absl::StatusOr<std::optional<IncomingMessage>> ReceiveMessage(int connection, uid_t sender,
                                                              std::size_t max_bytes = v1::region_socket::kRequestBytes);

// The reply record: `code` a gRPC status code, `text` the region id or the reason. Never blocks and
// never raises SIGPIPE; a caller that went away simply misses it.
void SendReply(int connection, absl::StatusCode code, std::string_view text);

}  // namespace gpusort
