// How ClientOptions become a gRPC channel: the target (several servers as one ipv4:/ipv6: list), the
// service config (load balancing, health-checked picks, retries) and the credentials (TLS). Private to
// the client library; tests include it to check the pieces one by one.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include "absl/status/statusor.h"
#include "gpusort/client.h"

namespace gpusort::client_internal {

struct ChannelTarget {
  std::string uri;        // what grpc::CreateCustomChannel dials
  std::string authority;  // set for a list of servers: the name TLS checks (host[:port] of the first)
  int servers = 1;        // how many addresses `uri` names (1 for a resolver target such as dns:///)
};

// options.targets when it holds several (each resolved to its addresses, all of one family), else
// options.target (or the one element of targets) as it is.
absl::StatusOr<ChannelTarget> ResolveTarget(const ClientOptions& options);

// "round_robin" or "pick_first": options.load_balancing, or the default for this many servers.
std::string LoadBalancingPolicy(const ClientOptions& options, int servers);

// The channel's service config JSON: the policy, client-side health checking under round_robin, and
// the retry policy for SortService's pure calls and EchoService.
std::string ServiceConfigJson(const std::string& policy, const RetryOptions& retry);

// The channel to `target` for `options` (service config, credentials, limits, arguments), with the
// arguments in `extra` added; `credentials` as MakeChannelCredentials takes them.
absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannelTo(
    const ClientOptions& options, const ChannelTarget& target, const grpc::ChannelArguments& extra,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials);

// `credentials` when set (ClientWithCredentials), else insecure or TLS credentials built from
// options.tls (files read here).
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientOptions& options, const std::shared_ptr<grpc::ChannelCredentials>& credentials);

}  // namespace gpusort::client_internal
