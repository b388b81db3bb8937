// gpusort/grpc_interop.h: a Client with the caller's own credentials, and the channel and call
// contexts a Client would make, for callers that speak gRPC themselves.
#include "gpusort/grpc_interop.h"

#include <chrono>
#include <utility>

#include "client/src/channel_config.h"
#include "client/src/client_impl.h"

namespace gpusort {

Client ClientWithCredentials(ClientOptions options, std::shared_ptr<grpc::ChannelCredentials> credentials) {
  return client_internal::ClientAccess::Make(std::move(options), std::move(credentials));
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(const ClientOptions& options,
                                                             std::shared_ptr<grpc::ChannelCredentials> credentials) {
  auto target = client_internal::ResolveTarget(options);
  if (!target.ok()) return target.status();
  return client_internal::CreateChannelTo(options, *target, grpc::ChannelArguments(), credentials);
}

void AddCallMetadata(const ClientOptions& options, grpc::ClientContext& context) {
  if (!options.request_id.empty()) context.AddMetadata("x-request-id", options.request_id);
  if (!options.bearer_token.empty()) context.AddMetadata("authorization", "Bearer " + options.bearer_token);
}

std::unique_ptr<grpc::ClientContext> NewCallContext(const ClientOptions& options) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (options.timeout.count() > 0) context->set_deadline(std::chrono::system_clock::now() + options.timeout);
  AddCallMetadata(options, *context);
  return context;
}

}  // namespace gpusort
