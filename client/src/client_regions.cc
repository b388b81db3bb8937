// Client::Impl's shared memory: regions registered on the server's --shm-socket, Sort and TopK calls
// that name ranges of them, and the pool of regions behind Transport::kSharedMemory.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "client/src/awake_wait.h"
#include "client/src/client_impl.h"
#include "client/src/proto_convert.h"
#include "gpusort/v1/region_calls.h"

namespace gpusort {

using client_internal::FillSortOptions;
using client_internal::FillTopKOptions;
using client_internal::FromProto;
using client_internal::KeyBytes;
using client_internal::ToAbsl;
using client_internal::ToProto;

namespace {

// A region call's ExecutionInfo from its answer on the shared-memory socket; nullopt when the call must go
// over gRPC instead.
template <typename Response>
absl::StatusOr<std::optional<client::ExecutionInfo>> InfoOf(absl::StatusOr<std::optional<std::string>> answer) {
  if (!answer.ok()) return answer.status();
  if (!answer->has_value()) return std::nullopt;
  Response response;
  if (!response.ParseFromString(**answer)) {
    return absl::InternalError("the server's answer is not a " + Response::descriptor()->name());
  }
  return std::optional<client::ExecutionInfo>(FromProto(response.info()));
}

}  // namespace

absl::Status Client::Impl::Impl::SharedMemoryAllowed() const {
  if (balancing_) {
    return absl::FailedPreconditionError(
        "shared memory needs one server (a region lives on the server that registered it); this client "
        "balances its calls over several");
  }
  if (options_.shm_socket.empty()) {
    return absl::FailedPreconditionError(
        "shared memory needs ClientOptions::shm_socket: the path of the server's --shm-socket");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> Client::Impl::Impl::NewRegion(std::size_t bytes) const {
  // Registering pins the memory on a GPU server, which takes a while for large regions: at least a
  // minute, or the call deadline when that is longer.
  const std::chrono::milliseconds timeout =
      std::max<std::chrono::milliseconds>(options_.timeout, std::chrono::minutes(1));
  return SharedMemoryRegion::Create(options_.shm_socket, bytes, timeout);
}

absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> Client::Impl::CreateSharedMemory(std::size_t bytes) {
  if (!init_status_.ok()) return init_status_;
  if (absl::Status allowed = SharedMemoryAllowed(); !allowed.ok()) return allowed;
  return NewRegion(bytes);
}

absl::StatusOr<client::ExecutionInfo> Client::Impl::SortInRegion(client::DType dtype, const SortOptions& options,
                                                                 client::Payload payload, const client::RegionRef& keys,
                                                                 const client::RegionRef& output,
                                                                 const client::RegionRef* indices) {
  if (!init_status_.ok()) return init_status_;
  if (absl::Status allowed = SharedMemoryAllowed(); !allowed.ok()) return allowed;
  v1::SortRequest request;
  RawSortRequest raw;
  raw.dtype = dtype;
  raw.options = options;
  raw.payload = payload;
  FillSortOptions(raw, request.mutable_options());
  *request.mutable_keys_region() = ToProto(keys);
  *request.mutable_output_region() = ToProto(output);
  if (indices != nullptr) *request.mutable_indices_region() = ToProto(*indices);
  auto on_socket = InfoOf<v1::SortResponse>(CallOnRegionSocket(v1::region_calls::Method::kSort, request));
  if (!on_socket.ok()) return on_socket.status();
  if (on_socket->has_value()) return **on_socket;
  v1::SortResponse response;
  auto context = NewContext();
  const grpc::Status status = client_internal::CallUnary(
      options_.wait_spin, &response, [&] { return stub_->Sort(context.get(), request, &response); },
      [&](grpc::CompletionQueue* cq) { return stub_->AsyncSort(context.get(), request, cq); });
  if (!status.ok()) return ToAbsl(status);
  return FromProto(response.info());
}

absl::StatusOr<client::ExecutionInfo> Client::Impl::TopKInRegion(client::DType dtype, const TopKOptions& options,
                                                                 const client::RegionRef& keys,
                                                                 const client::RegionRef* values,
                                                                 const client::RegionRef* indices) {
  if (!init_status_.ok()) return init_status_;
  if (absl::Status allowed = SharedMemoryAllowed(); !allowed.ok()) return allowed;
  v1::TopKRequest request;
  FillTopKOptions(dtype, options, request.mutable_options());
  *request.mutable_keys_region() = ToProto(keys);
  if (values != nullptr) *request.mutable_values_region() = ToProto(*values);
  if (indices != nullptr) *request.mutable_indices_region() = ToProto(*indices);
  auto on_socket = InfoOf<v1::TopKResponse>(CallOnRegionSocket(v1::region_calls::Method::kTopK, request));
  if (!on_socket.ok()) return on_socket.status();
  if (on_socket->has_value()) return **on_socket;
  v1::TopKResponse response;
  auto context = NewContext();
  const grpc::Status status = client_internal::CallUnary(
      options_.wait_spin, &response, [&] { return stub_->TopK(context.get(), request, &response); },
      [&](grpc::CompletionQueue* cq) { return stub_->AsyncTopK(context.get(), request, cq); });
  if (!status.ok()) return ToAbsl(status);
  return FromProto(response.info());
}

absl::StatusOr<std::optional<std::string>> Client::Impl::CallOnRegionSocket(v1::region_calls::Method method,
                                                                           const google::protobuf::Message& request) {
  if (region_calls_ == nullptr) return std::nullopt;
  return region_calls_->Send({.method = static_cast<std::uint16_t>(method),
                              .token = options_.bearer_token,
                              .request_id = options_.request_id,
                              .timeout = options_.timeout,
                              .request = request.SerializeAsString()});
}

absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> Client::Impl::TakeRegion(std::size_t bytes) {
  {
    std::lock_guard lock(regions_mutex_);
    for (auto it = free_regions_.begin(); it != free_regions_.end(); ++it) {
      if ((*it)->size() >= bytes) {
        auto region = std::move(*it);
        free_regions_.erase(it);
        return region;
      }
    }
  }
  // Rounded up to a power of two so that a few sizes serve many calls; registering costs milliseconds.
  std::size_t size = 1u << 20;
  while (size < bytes) size *= 2;
  return NewRegion(size);
}

void Client::Impl::ReleaseRegion(std::unique_ptr<SharedMemoryRegion> region) {
  std::lock_guard lock(regions_mutex_);
  free_regions_.push_back(std::move(region));
}

absl::StatusOr<RawSortResult> Client::Impl::SortThroughRegion(const RawSortRequest& r) {
  if (absl::Status allowed = SharedMemoryAllowed(); !allowed.ok()) return allowed;
  if (r.payload == client::Payload::kValues) {
    return absl::InvalidArgumentError("the shared-memory transport does not carry values; use unary or streaming");
  }
  const std::size_t n = r.keys.size() / KeyBytes(r.dtype);
  const std::size_t index_bytes = r.payload == client::Payload::kIndices ? n * sizeof(int64_t) : 0;
  // Layout: [keys, sorted in place][indices], the indices 8-byte aligned.
  const std::size_t index_offset = (r.keys.size() + 7) / 8 * 8;
  auto region = TakeRegion(std::max<std::size_t>(1, index_offset + index_bytes));
  if (!region.ok()) return region.status();
  std::memcpy((*region)->data(), r.keys.data(), r.keys.size());
  const client::RegionRef keys = (*region)->Ref(0, r.keys.size());
  const client::RegionRef indices = (*region)->Ref(index_offset, index_bytes);
  auto info = SortInRegion(r.dtype, r.options, r.payload, keys, keys,
                           r.payload == client::Payload::kIndices ? &indices : nullptr);
  RawSortResult result;
  if (info.ok()) {
    result.keys.assign(reinterpret_cast<const char*>((*region)->data()), r.keys.size());
    result.indices.assign(reinterpret_cast<const char*>((*region)->data()) + index_offset, index_bytes);
    result.info = std::move(*info);
  }
  ReleaseRegion(std::move(*region));
  if (!info.ok()) return info.status();
  return result;
}

absl::StatusOr<RawTopKResult> Client::Impl::TopKThroughRegion(client::DType dtype, std::string_view keys,
                                                        const TopKOptions& o) {
  if (absl::Status allowed = SharedMemoryAllowed(); !allowed.ok()) return allowed;
  const std::size_t results = TopKResultCount(o);
  const bool want_values = o.output != client::TopKOutput::kIndices;
  const bool want_indices = o.output != client::TopKOutput::kValues;
  const std::size_t value_offset = (keys.size() + 7) / 8 * 8;
  const std::size_t value_bytes = want_values ? results * KeyBytes(dtype) : 0;
  const std::size_t index_offset = (value_offset + value_bytes + 7) / 8 * 8;
  const std::size_t index_bytes = want_indices ? results * sizeof(int64_t) : 0;
  auto region = TakeRegion(std::max<std::size_t>(1, index_offset + index_bytes));
  if (!region.ok()) return region.status();
  std::memcpy((*region)->data(), keys.data(), keys.size());
  const client::RegionRef keys_ref = (*region)->Ref(0, keys.size());
  const client::RegionRef values_ref = (*region)->Ref(value_offset, value_bytes);
  const client::RegionRef indices_ref = (*region)->Ref(index_offset, index_bytes);
  auto info = TopKInRegion(dtype, o, keys_ref, want_values ? &values_ref : nullptr,
                           want_indices ? &indices_ref : nullptr);
  RawTopKResult result;
  if (info.ok()) {
    const char* base = reinterpret_cast<const char*>((*region)->data());
    result.values.assign(base + value_offset, value_bytes);
    result.indices.assign(base + index_offset, index_bytes);
    result.info = std::move(*info);
  }
  ReleaseRegion(std::move(*region));
  if (!info.ok()) return info.status();
  return result;
}

}  // namespace gpusort
