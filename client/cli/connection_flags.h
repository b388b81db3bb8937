// The flags every subcommand that talks to a server shares for reaching it: the server list, load
// balancing, TLS and the bearer token; and how they become ClientOptions.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "absl/status/status.h"
#include "gpusort/client.h"

namespace gpusort::cli {

struct SecurityFlags {
  std::string load_balancing;  // "" (by the number of servers), round_robin, pick_first
  std::string tls_ca, tls_cert, tls_key, tls_server_name;
  bool tls = false;            // TLS with the system's roots (implied by any --tls-* file)
  std::string token_file;      // or env GPUSORT_TOKEN_FILE; the token itself may come in GPUSORT_TOKEN
};

// --load-balancing, --tls, --tls-ca, --tls-cert, --tls-key, --tls-server-name, --token-file.
void AddSecurityFlags(CLI::App* app, SecurityFlags* flags);

// --shm-socket (or env GPUSORT_SHM_SOCKET): the server's shared-memory socket, for --transport shm.
void AddShmSocketFlag(CLI::App* app, std::string* path);

// Sets options.targets from `servers` (comma-separated), then load balancing, TLS and the bearer token
// (read from the token file, else from GPUSORT_TOKEN). A token file that cannot be read or holds no
// token fails here, before any call.
absl::Status ApplyConnectionFlags(const std::string& servers, const SecurityFlags& flags, ClientOptions* options);

// The first line of `path` that is neither empty nor a # comment, without surrounding blanks.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace gpusort::cli
