// gpusort::Client and gRPC together: the one gpusort header that includes gRPC, for callers that use
// gRPC themselves. gpusort/client.h needs none of it.
//
//   // Credentials of the caller's own (a token service's, ALTS, TLS from a key store) instead of
//   // ClientOptions::tls:
//   gpusort::Client client = gpusort::ClientWithCredentials({.target = "sorter:50051"}, credentials);
//   // The server's other services (EchoService, grpc.health.v1), dialled as a Client dials:
//   auto channel = gpusort::CreateChannel(options);
//   auto context = gpusort::NewCallContext(options);  // deadline, x-request-id, bearer token
#pragma once

#include <memory>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/security/credentials.h>

#include "absl/status/statusor.h"
#include "gpusort/client.h"

namespace gpusort {

// A Client whose channels (the main one and a split sort's part connections) use `credentials`
// instead of options.tls; the bearer token, if any, is still added to every call. Null credentials:
// as Client(options).
Client ClientWithCredentials(ClientOptions options, std::shared_ptr<grpc::ChannelCredentials> credentials);

// The channel a Client with these options dials: target(s), load balancing, retries, TLS (or
// `credentials` when set, as ClientWithCredentials), message limits and channel arguments. For calling
// the server's other services (EchoService) alike.
absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(
    const ClientOptions& options, std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);

// A call context as a Client makes them: the deadline (options.timeout), x-request-id and the bearer
// token.
std::unique_ptr<grpc::ClientContext> NewCallContext(const ClientOptions& options);

// The metadata every call carries (x-request-id, authorization), without a deadline.
void AddCallMetadata(const ClientOptions& options, grpc::ClientContext& context);

}  // namespace gpusort
