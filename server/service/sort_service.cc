#include "server/service/sort_service.h"

#include "server/service/register_region_call.h"
#include "server/service/stream_calls.h"
#include "server/service/unary_calls.h"

namespace gpusort {

grpc::ServerUnaryReactor* SortService::Sort(grpc::CallbackServerContext* context,
                                            const v1::SortRequest* request,
                                            v1::SortResponse* response) {
  return StartSortCall(core_, context, request, response);
}

grpc::ServerUnaryReactor* SortService::TopK(grpc::CallbackServerContext* context,
                                            const v1::TopKRequest* request,
                                            v1::TopKResponse* response) {
  return StartTopKCall(core_, context, request, response);
}

grpc::ServerBidiReactor<v1::SortStreamRequest, v1::SortStreamResponse>* SortService::SortStream(
    grpc::CallbackServerContext* context) {
  return StartSortStreamCall(core_, context);
}

grpc::ServerBidiReactor<v1::TopKStreamRequest, v1::TopKStreamResponse>* SortService::TopKStream(
    grpc::CallbackServerContext* context) {
  return StartTopKStreamCall(core_, context);
}

grpc::ServerWriteReactor<v1::RegisterRegionEvent>* SortService::RegisterRegion(
    grpc::CallbackServerContext* context, const v1::RegisterRegionRequest* request) {
  return StartRegisterRegionCall(core_, context, request);
}

}  // namespace gpusort
