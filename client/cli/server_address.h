// What --server (-s, GPUSORT_SERVER) accepts on every subcommand: one host:port, a comma-separated list
// of them, or one gRPC target with a resolver scheme (dns:///host:port, unix:PATH). A host without a port
// gets the server's default port; a URL gets a refusal that says what to write instead (gRPC would dial
// "http://h:p" as a DNS name and fail with a resolver error, and "host" alone as port 0).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpusort::cli {

inline constexpr std::string_view kDefaultServerPort = "50051";  // gpusort-server's --listen default

absl::StatusOr<std::vector<std::string>> ServerTargets(std::string_view servers);

}  // namespace gpusort::cli
