// RegisterRegion: maps and pins a caller's shared-memory object, answers with its id, and holds the
// registration for as long as the call stays open. The caller's cancel, its going away, or the server's
// shutdown ends the call and unregisters the region.
#pragma once

#include <grpcpp/grpcpp.h>

#include "gpusort/v1/sort.grpc.pb.h"
#include "server/service/service_core.h"

namespace gpusort {

grpc::ServerWriteReactor<v1::RegisterRegionEvent>* StartRegisterRegionCall(
    ServiceCore& core, grpc::CallbackServerContext* context, const v1::RegisterRegionRequest* request);

}  // namespace gpusort
