// The reactor of SortOnSockets (sort.proto, "Sockets beside gRPC"): validates the options, makes the
// job and its ticket, tells the caller both, and ends the call when the job ends.
#pragma once

#include <grpcpp/grpcpp.h>

#include "gpusort/v1/sort.pb.h"
#include "server/service/service_core.h"

namespace gpusort {

grpc::ServerWriteReactor<v1::SocketSortEvent>* StartSocketSortCall(ServiceCore& core,
                                                                   grpc::CallbackServerContext* context,
                                                                   const v1::SocketSortRequest* request);

}  // namespace gpusort
