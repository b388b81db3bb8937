// The gRPC port's credentials from the flags: plaintext, TLS (--tls-cert, --tls-key) or mutual TLS
// (--tls-client-ca: client certificates required and checked against that CA). Every file is read and
// its PEM parsed here, at start, so that a missing, unreadable or broken file stops the server with a
// message naming it instead of a server that fails each handshake, or serves in plaintext.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"
#include "server/service/config.h"

namespace gpusort {

struct ServerTls {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::string description;  // "plaintext", "TLS", "mutual TLS": for the start-up log line
};

absl::StatusOr<ServerTls> MakeServerTls(const ServerConfig& config);

}  // namespace gpusort
