// RegisterRegion, the gRPC registration by shm_open name, is retired: a server that opened a name with
// its own rights could be made to read and write memory its caller had no right to (issue 14). The RPC
// stays in sort.proto for clients built against it and is answered FAILED_PRECONDITION, pointing at the
// Unix-socket registration (--shm-socket) that replaced it.
#pragma once

#include <grpcpp/grpcpp.h>

#include "gpusort/v1/sort.grpc.pb.h"
#include "server/service/service_core.h"

namespace gpusort {

grpc::ServerWriteReactor<v1::RegisterRegionEvent>* StartRegisterRegionCall(
    ServiceCore& core, grpc::CallbackServerContext* context, const v1::RegisterRegionRequest* request);

}  // namespace gpusort
