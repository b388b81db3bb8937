#include "server/service/caller_identity.h"

#include <openssl/sha.h>

#include <cstdio>

#include "server/service/auth.h"

namespace gpusort {

std::string CallerIdentity(const grpc::CallbackServerContext& context, bool tokens_on) {
  if (tokens_on) {
    const auto& metadata = context.client_metadata();
    if (auto it = metadata.find("authorization"); it != metadata.end()) {
      std::string identity = TokenCallerIdentity(std::string_view(it->second.data(), it->second.size()));
      if (!identity.empty()) return identity;
    }
  }
  return PeerHost(context.peer());
}

std::string TokenCallerIdentity(std::string_view authorization) {
  // The token's bytes, never the header's: a share keyed by the header was one per spelling.
  const std::optional<std::string_view> token = BearerToken(authorization);
  if (!token.has_value()) return {};
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token->data()), token->size(), digest);
  char hex[17];
  for (int i = 0; i < 8; ++i) std::snprintf(hex + 2 * i, 3, "%02x", digest[i]);
  return std::string("token:") + hex;
}

std::string PeerHost(std::string_view peer) {
  const std::size_t colon = peer.rfind(':');
  const std::size_t scheme = peer.find(':');
  if (colon == std::string_view::npos || colon == scheme) return std::string(peer);  // "unix:/path": no port
  return std::string(peer.substr(0, colon));
}

}  // namespace gpusort
