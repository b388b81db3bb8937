#include "client/cli/server_address.h"

#include <algorithm>

#include "gpusort/client.h"

namespace gpusort::cli {
namespace {

// "host" -> "host:50051", "[::1]" -> "[::1]:50051"; a host with a port, a bare IPv6 address (two colons
// or more, which cannot carry a port without brackets) and a target with a resolver scheme (dns:, unix:,
// ..., which SplitServerList keeps whole; every one holds a colon) are left as they are.
std::string WithPort(const std::string& address) {
  if (!address.empty() && address.front() == '[') {
    return address.back() == ']' ? address + ":" + std::string(kDefaultServerPort) : address;
  }
  const std::size_t colons = static_cast<std::size_t>(std::count(address.begin(), address.end(), ':'));
  return colons == 0 ? address + ":" + std::string(kDefaultServerPort) : address;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ServerTargets(std::string_view servers) {
  for (std::string_view url : {"http://", "https://", "grpc://", "grpcs://"}) {
    if (servers.find(url) != std::string_view::npos) {
      return absl::InvalidArgumentError(
          "--server takes host:port, not a URL ('" + std::string(url) +
          "...'): write e.g. localhost:50051 (add --tls for a TLS server), or a gRPC target such as "
          "dns:///host:50051");
    }
  }
  std::vector<std::string> out = SplitServerList(servers);
  if (out.empty()) return absl::InvalidArgumentError("--server names no server");
  for (std::string& address : out) address = WithPort(address);
  return out;
}

}  // namespace gpusort::cli
