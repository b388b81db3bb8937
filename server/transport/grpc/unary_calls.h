// Reactors of the unary Sort and TopK RPCs. Each validates on the gRPC thread, runs on a worker,
// and replies from there; it deletes itself when gRPC is done with it.
#pragma once

#include <grpcpp/grpcpp.h>

#include "gpusort/v1/sort.pb.h"
#include "server/service/service_core.h"

namespace gpusort {

grpc::ServerUnaryReactor* StartSortCall(ServiceCore& core, grpc::CallbackServerContext* context,
                                        const v1::SortRequest* request,
                                        v1::SortResponse* response);
grpc::ServerUnaryReactor* StartTopKCall(ServiceCore& core, grpc::CallbackServerContext* context,
                                        const v1::TopKRequest* request,
                                        v1::TopKResponse* response);

}  // namespace gpusort
