// gpusort::Client's own methods: each hands the call to its Impl (client_impl.h), where gRPC lives.
#include <utility>

#include "client/src/client_impl.h"

namespace gpusort {

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options), nullptr)) {}
Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

absl::Status Client::status() const { return impl_->init_status_; }
const ClientOptions& Client::options() const { return impl_->options_; }
bool Client::balancing() const { return impl_->balancing_; }

absl::StatusOr<RawSortResult> Client::SortRaw(const RawSortRequest& request) { return impl_->SortRaw(request); }
absl::StatusOr<client::ExecutionInfo> Client::SortRawInto(const RawSortRequest& request, std::span<std::byte> keys_out,
                                                          std::span<std::byte> indices_out) {
  return impl_->SortRawInto(request, keys_out, indices_out);
}

absl::StatusOr<RawTopKResult> Client::TopKRaw(client::DType dtype, std::string_view keys, const TopKOptions& options) {
  return impl_->TopKRaw(dtype, keys, options);
}

absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> Client::CreateSharedMemory(std::size_t bytes) {
  return impl_->CreateSharedMemory(bytes);
}

absl::StatusOr<client::ExecutionInfo> Client::SortInRegion(client::DType dtype, const SortOptions& options,
                                                           client::Payload payload, const client::RegionRef& keys,
                                                           const client::RegionRef& output,
                                                           const client::RegionRef* indices) {
  return impl_->SortInRegion(dtype, options, payload, keys, output, indices);
}

absl::StatusOr<client::ExecutionInfo> Client::TopKInRegion(client::DType dtype, const TopKOptions& options,
                                                           const client::RegionRef& keys,
                                                           const client::RegionRef* values,
                                                           const client::RegionRef* indices) {
  return impl_->TopKInRegion(dtype, options, keys, values, indices);
}

absl::StatusOr<bool> Client::Health(const std::string& service) { return impl_->Health(service); }

}  // namespace gpusort
