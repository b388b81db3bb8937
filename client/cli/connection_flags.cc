#include "client/cli/connection_flags.h"

#include <cstdlib>
#include <fstream>

#include "client/cli/server_address.h"

namespace gpusort::cli {
namespace {

std::string Trim(std::string s) {
  const char* blanks = " \t\r\n";
  s.erase(0, s.find_first_not_of(blanks) == std::string::npos ? s.size() : s.find_first_not_of(blanks));
  s.erase(s.find_last_not_of(blanks) + 1);
  return s;
}

}  // namespace

void AddSecurityFlags(CLI::App* app, SecurityFlags* f) {
  app->add_option("--load-balancing", f->load_balancing,
                  "round_robin or pick_first (default: round_robin when --server lists several)")
      ->check(CLI::IsMember({"round_robin", "pick_first"}));
  app->add_flag("--tls", f->tls, "TLS to the server, trusting the system's roots (implied by --tls-*)");
  app->add_option("--tls-ca", f->tls_ca, "PEM file of the CA that signed the server's certificate")
      ->envname("GPUSORT_TLS_CA");
  app->add_option("--tls-cert", f->tls_cert, "mutual TLS: this client's certificate (PEM)")
      ->envname("GPUSORT_TLS_CERT");
  app->add_option("--tls-key", f->tls_key, "mutual TLS: this client's private key (PEM)")
      ->envname("GPUSORT_TLS_KEY");
  app->add_option("--tls-server-name", f->tls_server_name,
                  "the name the server's certificate must hold, when not the --server host");
  app->add_option("--token-file", f->token_file,
                  "bearer token for the server's --auth-tokens-file (first non-comment line; "
                  "or the token itself in env GPUSORT_TOKEN)")
      ->envname("GPUSORT_TOKEN_FILE");
}

void AddShmSocketFlag(CLI::App* app, std::string* path) {
  app->add_option("--shm-socket", *path,
                  "--transport shm or device: the server's shared-memory socket (its --shm-socket path); "
                  "the server must be on this host")
      ->envname("GPUSORT_SHM_SOCKET");
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot read the token file '" + path + "'");
  for (std::string line; std::getline(in, line);) {
    line = Trim(line);
    if (!line.empty() && line.front() != '#') return line;
  }
  return absl::InvalidArgumentError("the token file '" + path + "' holds no token");
}

absl::Status ApplyConnectionFlags(const std::string& servers, const SecurityFlags& f, ClientOptions* options) {
  absl::StatusOr<std::vector<std::string>> targets = ServerTargets(servers);
  if (!targets.ok()) return targets.status();
  std::vector<std::string> list = *std::move(targets);
  if (list.size() == 1) {
    options->target = list.front();
  } else {
    options->targets = std::move(list);
  }
  options->load_balancing = f.load_balancing;
  options->tls.enabled = f.tls;
  options->tls.ca_file = f.tls_ca;
  options->tls.cert_file = f.tls_cert;
  options->tls.key_file = f.tls_key;
  options->tls.server_name = f.tls_server_name;
  if (f.tls_cert.empty() != f.tls_key.empty())
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  if (!f.token_file.empty()) {
    auto token = ReadTokenFile(f.token_file);
    if (!token.ok()) return token.status();
    options->bearer_token = *token;
  } else if (const char* token = std::getenv("GPUSORT_TOKEN"); token != nullptr && *token != '\0') {
    options->bearer_token = Trim(token);
  }
  return absl::OkStatus();
}

}  // namespace gpusort::cli
