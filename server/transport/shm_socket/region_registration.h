// One registration request off the socket, judged: the record (magic, version, kind, reserved bytes),
// exactly one descriptor, the memory behind it (shared_memory_fd.h), then the server's and the user's
// limits (shared_regions.h). The answer is the region id or the status the reply carries.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "server/transport/shm_socket/region_socket_io.h"
#include "server/service/shared_regions.h"

namespace gpusort {

absl::StatusOr<std::string> RegisterFromMessage(const IncomingMessage& message, const RegionOwner& owner,
                                                SharedRegions& regions);

}  // namespace gpusort
