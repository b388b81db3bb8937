// The parts of a gRPC listen address (--listen) that the server's other sockets need: the data port
// listens on the same host, and the port probe connects to it.
#pragma once

#include <string>

namespace gpusort {

// The host of a listen address ("0.0.0.0:50051", "[::]:50051", "localhost:0"); loopback for a Unix
// socket's, whose callers are on this host.
std::string ListenHost(const std::string& listen);

// Where this host reaches that address: loopback for a wildcard host ("0.0.0.0", "::").
std::string ConnectHost(const std::string& listen);

}  // namespace gpusort
