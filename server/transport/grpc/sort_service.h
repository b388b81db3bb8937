// The gpusort.v1.SortService gRPC service: a thin front that starts one reactor per call.
#pragma once

#include <string_view>

#include "gpusort/v1/sort.grpc.pb.h"
#include "server/service/auth.h"
#include "server/service/service_core.h"

namespace gpusort {

class SortService final : public v1::SortService::CallbackService {
 public:
  // `auth` (may be null: no tokens asked) must outlive the service.
  SortService(ServiceCore& core, const TokenAuth* auth) : core_(core), auth_(auth) {}

  grpc::ServerUnaryReactor* Sort(grpc::CallbackServerContext* context,
                                 const v1::SortRequest* request,
                                 v1::SortResponse* response) override;
  grpc::ServerUnaryReactor* TopK(grpc::CallbackServerContext* context,
                                 const v1::TopKRequest* request,
                                 v1::TopKResponse* response) override;
  grpc::ServerBidiReactor<v1::SortStreamRequest, v1::SortStreamResponse>* SortStream(
      grpc::CallbackServerContext* context) override;
  grpc::ServerBidiReactor<v1::TopKStreamRequest, v1::TopKStreamResponse>* TopKStream(
      grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<v1::SocketSortEvent>* SortOnSockets(grpc::CallbackServerContext* context,
                                                                const v1::SocketSortRequest* request) override;
  grpc::ServerWriteReactor<v1::RegisterRegionEvent>* RegisterRegion(
      grpc::CallbackServerContext* context, const v1::RegisterRegionRequest* request) override;

 private:
  // OK without --auth-tokens-file; else whether the call carries a known bearer token. A refused call
  // is recorded under `method` (metrics and log) before it is answered.
  absl::Status Authorize(grpc::CallbackServerContext* context, std::string_view method) const;

  ServiceCore& core_;
  const TokenAuth* auth_;
};

}  // namespace gpusort
