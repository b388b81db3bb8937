// Reactors of the streaming SortStream and TopKStream RPCs: chunks in, one job, chunks out.
#pragma once

#include <grpcpp/grpcpp.h>

#include "gpusort/v1/sort.pb.h"
#include "server/service/service_core.h"

namespace gpusort {

grpc::ServerBidiReactor<v1::SortStreamRequest, v1::SortStreamResponse>* StartSortStreamCall(
    ServiceCore& core, grpc::CallbackServerContext* context);
grpc::ServerBidiReactor<v1::TopKStreamRequest, v1::TopKStreamResponse>* StartTopKStreamCall(
    ServiceCore& core, grpc::CallbackServerContext* context);

}  // namespace gpusort
