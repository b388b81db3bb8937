// Client::Impl: everything gRPC behind gpusort::Client, so that client.h shows its callers only
// gpusort's own types: the channel and its stub, the part connections of split sorts, and the pool of
// shared-memory regions. Private to the client library. Every method may be called from many threads
// at once, as Client's are.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpusort/client.h"
#include "gpusort/grpc_interop.h"
#include "client/src/data_connections.h"
#include "client/src/region_call_connections.h"
#include "gpusort/v1/region_calls.h"
#include "gpusort/v1/sort.grpc.pb.h"

namespace gpusort {

struct Client::Impl {
  // `credentials` set: the channels use them instead of options.tls (ClientWithCredentials).
  Impl(ClientOptions options, std::shared_ptr<grpc::ChannelCredentials> credentials);

  // Client's calls (client.cc: over gRPC messages and streams; client_regions.cc: shared memory).
  absl::StatusOr<RawSortResult> SortRaw(const RawSortRequest& request);
  absl::StatusOr<client::ExecutionInfo> SortRawInto(const RawSortRequest& request, std::span<std::byte> keys_out,
                                                    std::span<std::byte> indices_out);
  absl::StatusOr<RawTopKResult> TopKRaw(client::DType dtype, std::string_view keys, const TopKOptions& options);
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> CreateSharedMemory(std::size_t bytes);
  absl::StatusOr<client::ExecutionInfo> SortInRegion(client::DType dtype, const SortOptions& options,
                                                     client::Payload payload, const client::RegionRef& keys,
                                                     const client::RegionRef& output, const client::RegionRef* indices);
  absl::StatusOr<client::ExecutionInfo> TopKInRegion(client::DType dtype, const TopKOptions& options,
                                                     const client::RegionRef& keys, const client::RegionRef* values,
                                                     const client::RegionRef* indices);
  absl::StatusOr<bool> Health(const std::string& service);

  std::unique_ptr<grpc::ClientContext> NewContext() const;
  std::size_t UnaryLimit() const;  // arrays larger than this cannot go in one message
  // Whether a call whose request holds `request_bytes` and whose answer `answer_bytes` is streamed.
  bool ShouldStream(std::size_t request_bytes, std::size_t answer_bytes) const;
  absl::StatusOr<RawSortResult> SortStreamed(const RawSortRequest& request);
  // Whether a streamed Sort is split over several SortStream calls (stream_parts).
  bool ShouldSplit(const RawSortRequest& request) const;
  // One Sort on `stream_parts` SortStream calls at once, one per part channel (proto StreamPart).
  absl::StatusOr<RawSortResult> SortStreamedInParts(const RawSortRequest& request);
  // The same, each part's answer written into its place in `keys_out` and `indices_out` (sized by the caller).
  absl::StatusOr<client::ExecutionInfo> SortInPartsInto(const RawSortRequest& request, std::span<std::byte> keys_out,
                                                        std::span<std::byte> indices_out);
  // A channel to the target with this client's credentials and arguments; `extra_argument` set (an
  // integer channel argument) gives it a connection of its own.
  absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::pair<std::string, int>* extra_argument) const;
  // The stubs of the part channels, `count` of them, made on first use.
  // UNAVAILABLE when one does not connect in time.
  absl::StatusOr<std::vector<v1::SortService::Stub*>> PartStubs(std::size_t count);
  absl::StatusOr<RawTopKResult> TopKStreamed(client::DType dtype, std::string_view keys, const TopKOptions& options);

  // Transport::kSockets (client_sockets.cc): whether this Sort goes over the data port, and the calls.
  bool ShouldUseSockets(const RawSortRequest& request) const;
  absl::StatusOr<RawSortResult> SortOnSockets(const RawSortRequest& request);
  absl::StatusOr<client::ExecutionInfo> SortOnSocketsInto(const RawSortRequest& request, std::span<std::byte> keys_out,
                                                          std::span<std::byte> indices_out);

  absl::StatusOr<RawSortResult> SortThroughRegion(const RawSortRequest& request);
  absl::StatusOr<RawTopKResult> TopKThroughRegion(client::DType dtype, std::string_view keys,
                                                  const TopKOptions& options);
  // A registered region of at least `bytes` for one call, from the pool or new; Release gives it back.
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> TakeRegion(std::size_t bytes);
  void ReleaseRegion(std::unique_ptr<SharedMemoryRegion> region);

  // A region call's request on shm_socket: its serialized response, or nullopt when it must go over gRPC
  // (no socket calls on this client, or the server does not take them).
  absl::StatusOr<std::optional<std::string>> CallOnRegionSocket(v1::region_calls::Method method,
                                                                const google::protobuf::Message& request);

  // FAILED_PRECONDITION for shared memory while balancing or without shm_socket; else OK.
  absl::Status SharedMemoryAllowed() const;
  // A new region of `bytes`, registered on shm_socket.
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> NewRegion(std::size_t bytes) const;

  ClientOptions options_;
  std::shared_ptr<grpc::ChannelCredentials> credentials_;  // null: insecure or options_.tls
  absl::Status init_status_;
  bool balancing_ = false;
  std::string target_uri_, target_authority_;  // options_' target(s), resolved once
  int target_servers_ = 1;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::SortService::Stub> stub_;
  std::mutex part_stubs_mutex_;
  std::vector<std::shared_ptr<grpc::Channel>> part_channels_;        // one per part, each its own connection
  std::vector<std::unique_ptr<v1::SortService::Stub>> part_stubs_;  // on part_channels_
  std::unique_ptr<client_internal::DataConnections> data_connections_;  // to the data port, kept
  // Calls on shm_socket (shm_calls_on_socket); null: region calls go over gRPC.
  std::unique_ptr<client_internal::RegionCallConnections> region_calls_;
  std::mutex regions_mutex_;
  std::vector<std::unique_ptr<SharedMemoryRegion>> free_regions_;
};

namespace client_internal {

// The way to Client's private constructor, for ClientWithCredentials (gpusort/grpc_interop.h).
struct ClientAccess {
  static Client Make(ClientOptions options, std::shared_ptr<grpc::ChannelCredentials> credentials) {
    return Client(std::make_unique<Client::Impl>(std::move(options), std::move(credentials)));
  }
};

inline absl::Status ToAbsl(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

// Bytes per key of `dtype` for the client's own sizing: at least 1, so that a request the server will
// refuse (client::DType::kUnspecified) still divides.
inline std::size_t KeyBytes(client::DType dtype) { return std::max<std::size_t>(client::ElementSize(dtype), 1); }

}  // namespace client_internal
}  // namespace gpusort
