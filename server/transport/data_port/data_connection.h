// One connection to the data port (sort.proto, "Sockets beside gRPC"): requests, each the header and
// keys of one part of a SortOnSockets call, answered in turn with that part's range of the sorted
// array, until the caller closes the connection or a part fails (then the failure is answered and the
// connection closed).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>

#include "server/transport/data_port/socket_sorts.h"

namespace gpusort {

struct DataConnectionLimits {
  std::chrono::milliseconds idle_between_parts{60000};  // for the next request header to begin
  std::chrono::milliseconds stall{30000};               // with no byte moving inside a part
  // Keys taken from the socket and handed on (or answered) at a time: through the engine's Write and
  // Read, and in direct mode (PartedSortIngest::StartDirect), where a chunk's commit only starts a DMA.
  std::size_t chunk_bytes = std::size_t{4} << 20;
  std::size_t direct_chunk_bytes = std::size_t{2} << 20;
};

// Serves `fd` (connected, from `peer_host`) until it is done; the caller closes it. Returns early once
// `stop` is set.
void ServeDataConnection(int fd, const std::string& peer_host, SocketSorts& sorts, const DataConnectionLimits& limits,
                         const std::atomic<bool>& stop);

}  // namespace gpusort
