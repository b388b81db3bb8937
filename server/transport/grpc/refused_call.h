// Reactors that answer a call with a status at once, reading and writing nothing: for calls refused
// before any work starts (no or a wrong bearer token). Nothing is sent but the status (Trailers-Only).
#pragma once

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "server/transport/grpc/grpc_hand_off.h"
#include "server/transport/grpc/grpc_status.h"

namespace gpusort {

inline grpc::ServerUnaryReactor* RefuseUnary(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

template <typename Request, typename Response>
class RefusedBidiCall final : public grpc::ServerBidiReactor<Request, Response> {
 public:
  explicit RefusedBidiCall(const absl::Status& status) {
    StartOnGrpc(this, [&] { this->Finish(ToGrpcStatus(status)); });
  }
  void OnDone() override {
    AcquireFromGrpc(this);
    delete this;
  }
};

template <typename Response>
class RefusedWriteCall final : public grpc::ServerWriteReactor<Response> {
 public:
  explicit RefusedWriteCall(const absl::Status& status) {
    StartOnGrpc(this, [&] { this->Finish(ToGrpcStatus(status)); });
  }
  void OnDone() override {
    AcquireFromGrpc(this);
    delete this;
  }
};

}  // namespace gpusort
