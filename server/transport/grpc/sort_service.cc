#include "server/transport/grpc/sort_service.h"

#include "server/service/call_state.h"
#include "server/transport/grpc/grpc_hand_off.h"
#include "server/transport/grpc/refused_call.h"
#include "server/transport/grpc/register_region_call.h"
#include "server/transport/grpc/socket_sort_call.h"
#include "server/transport/grpc/stream_calls.h"
#include "server/transport/grpc/unary_calls.h"

namespace gpusort {

absl::Status SortService::Authorize(grpc::CallbackServerContext* context, std::string_view method) const {
  if (auth_ == nullptr) return absl::OkStatus();
  absl::Status status = auth_->Check(*context);
  if (!status.ok()) {
    // Counted and logged like any other finished call (code UNAUTHENTICATED or PERMISSION_DENIED), so
    // that the request-rate panels and the error-rate alert see callers with no or a wrong token.
    CallState refused(method, context);
    (void)core_.Refuse(refused, status);  // the caller is answered `status`, below
  }
  return status;
}

grpc::ServerUnaryReactor* SortService::Sort(grpc::CallbackServerContext* context,
                                            const v1::SortRequest* request,
                                            v1::SortResponse* response) {
  AcquireFromGrpc(this);  // the server started after this service was built (grpc_hand_off.h)
  if (absl::Status s = Authorize(context, "Sort"); !s.ok()) return RefuseUnary(context, s);
  return StartSortCall(core_, context, request, response);
}

grpc::ServerUnaryReactor* SortService::TopK(grpc::CallbackServerContext* context,
                                            const v1::TopKRequest* request,
                                            v1::TopKResponse* response) {
  AcquireFromGrpc(this);  // the server started after this service was built (grpc_hand_off.h)
  if (absl::Status s = Authorize(context, "TopK"); !s.ok()) return RefuseUnary(context, s);
  return StartTopKCall(core_, context, request, response);
}

grpc::ServerBidiReactor<v1::SortStreamRequest, v1::SortStreamResponse>* SortService::SortStream(
    grpc::CallbackServerContext* context) {
  AcquireFromGrpc(this);  // the server started after this service was built (grpc_hand_off.h)
  if (absl::Status s = Authorize(context, "SortStream"); !s.ok())
    return new RefusedBidiCall<v1::SortStreamRequest, v1::SortStreamResponse>(s);
  return StartSortStreamCall(core_, context);
}

grpc::ServerBidiReactor<v1::TopKStreamRequest, v1::TopKStreamResponse>* SortService::TopKStream(
    grpc::CallbackServerContext* context) {
  AcquireFromGrpc(this);  // the server started after this service was built (grpc_hand_off.h)
  if (absl::Status s = Authorize(context, "TopKStream"); !s.ok())
    return new RefusedBidiCall<v1::TopKStreamRequest, v1::TopKStreamResponse>(s);
  return StartTopKStreamCall(core_, context);
}

grpc::ServerWriteReactor<v1::SocketSortEvent>* SortService::SortOnSockets(grpc::CallbackServerContext* context,
                                                                         const v1::SocketSortRequest* request) {
  AcquireFromGrpc(this);  // the server started after this service was built (grpc_hand_off.h)
  if (absl::Status s = Authorize(context, "SortOnSockets"); !s.ok()) return new RefusedWriteCall<v1::SocketSortEvent>(s);
  return StartSocketSortCall(core_, context, request);
}

grpc::ServerWriteReactor<v1::RegisterRegionEvent>* SortService::RegisterRegion(
    grpc::CallbackServerContext* context, const v1::RegisterRegionRequest* request) {
  AcquireFromGrpc(this);  // the server started after this service was built (grpc_hand_off.h)
  if (absl::Status s = Authorize(context, "RegisterRegion"); !s.ok()) return new RefusedWriteCall<v1::RegisterRegionEvent>(s);
  return StartRegisterRegionCall(core_, context, request);
}

}  // namespace gpusort
