// Who a call comes from, for the per-caller shares of the server's limits (--max-inflight-per-caller):
// with bearer tokens on, the token the call proved it holds; without, the caller's network address.
// Without tokens, every caller behind one address (loopback, a NAT, a proxy) shares one share.
#pragma once

#include <string>
#include <string_view>

#include <grpcpp/server_context.h>

namespace gpusort {

// "token:<16 hex digits of its SHA-256>" when `tokens_on` and the call carries a bearer token (already
// checked by then), else the host part of the peer ("ipv4:10.0.0.7"). Never the token itself.
std::string CallerIdentity(const grpc::CallbackServerContext& context, bool tokens_on);

// "token:<16 hex digits>" for an authorization header's value ("Bearer <token>"), as above: the same
// caller whether its calls come over gRPC or on the shared-memory socket, and however the header is
// spelled (the token as BearerToken reads it: scheme in any case, blanks around the token trimmed).
// Empty when the value holds no bearer token (authentication refused such a call already).
std::string TokenCallerIdentity(std::string_view authorization);

// The host part of a gRPC peer string ("ipv4:127.0.0.1:5000" -> "ipv4:127.0.0.1").
std::string PeerHost(std::string_view peer);

}  // namespace gpusort
