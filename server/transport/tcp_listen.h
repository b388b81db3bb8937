// A TCP listening socket for the server's own listeners (the data port, /metrics): resolved, bound and
// listening, non-blocking, with the port it got.
#pragma once

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "server/core/unique_fd.h"

namespace gpusort {

struct TcpListener {
  UniqueFd fd;
  int port = 0;  // the bound port (the one asked for, or the free one chosen for 0)
};

// Listens on `host`:`port` (a name, an IPv4 or an IPv6 address; port 0: a free one) with `backlog`.
// INVALID_ARGUMENT when the host does not resolve, UNAVAILABLE when the port cannot be had; `what`
// names the listener in those messages ("the data port").
absl::StatusOr<TcpListener> ListenTcp(const std::string& host, int port, int backlog, const std::string& what);

// "host:port" (--metrics-listen's form; "[::1]:9464" for IPv6; a bare "9464" is every address) split
// into its host and port; INVALID_ARGUMENT for anything else.
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address);

}  // namespace gpusort
