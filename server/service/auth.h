// Bearer-token auth for the gRPC services that do work (SortService, EchoService): every call must
// carry "authorization: Bearer <token>" with a token from --auth-tokens-file. The health service and
// reflection never ask for one, so probes and tools keep working.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/server_context.h>

#include "absl/status/statusor.h"

namespace gpusort {

class TokenAuth {
 public:
  // One token per line; blank lines and lines starting with # are skipped, blanks around a token
  // trimmed. A file that cannot be read, holds no token, or a token with characters gRPC metadata
  // cannot carry (controls, spaces inside) is an error: the server must not start open by accident.
  static absl::StatusOr<std::unique_ptr<TokenAuth>> FromFile(const std::string& path);
  static absl::StatusOr<std::unique_ptr<TokenAuth>> FromText(std::string_view text, const std::string& source);

  // OK for a known token; UNAUTHENTICATED without an authorization header or with one that is not a
  // bearer token; PERMISSION_DENIED for a token this server does not know.
  absl::Status Check(const grpc::CallbackServerContext& context) const;
  absl::Status CheckAuthorization(const std::string_view* header) const;  // nullptr: none was sent

  std::size_t size() const { return digests_.size(); }

 private:
  using Digest = std::array<uint8_t, 32>;
  explicit TokenAuth(std::vector<Digest> digests) : digests_(std::move(digests)) {}
  // Whether `token` is one of ours. Tokens are compared as SHA-256 digests, so every comparison is of
  // 32 bytes whatever the lengths (no length leaks but the time to hash what the caller sent, which the
  // caller knows); each digest is compared with CRYPTO_memcmp (no exit at the first differing byte),
  // and every known token is compared whether or not one matched already.
  bool Known(std::string_view token) const;

  std::vector<Digest> digests_;
};

// The token of an authorization header's value, as every part of the server reads it: the scheme
// "Bearer" in any case (RFC 6750), then the token with the spaces and tabs around it trimmed. nullopt
// when the value is not a bearer token. Authentication, the per-caller shares, logs and metrics all key
// on these bytes, so that one token spelled several ways ("bearer", "BEARER", padded) is one caller.
std::optional<std::string_view> BearerToken(std::string_view authorization);

// a == b in time that depends only on the lengths (CRYPTO_memcmp when they are equal).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace gpusort
