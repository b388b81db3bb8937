#include "server/transport/grpc/register_region_call.h"

#include <string>

#include "server/transport/grpc/refused_call.h"

namespace gpusort {

grpc::ServerWriteReactor<v1::RegisterRegionEvent>* StartRegisterRegionCall(ServiceCore& core,
                                                                           grpc::CallbackServerContext*,
                                                                           const v1::RegisterRegionRequest*) {
  // Nothing of the request is looked at, and nothing is opened: whatever name it carries, the answer is
  // the same.
  const bool on = !core.config().shm_socket.empty();
  return new RefusedWriteCall<v1::RegisterRegionEvent>(absl::FailedPreconditionError(
      std::string("RegisterRegion (by shm_open name) is retired: register shared memory by handing the "
                  "server a sealed memfd over its Unix socket (sort.proto, \"Shared memory\")") +
      (on ? "; this server's socket is " + core.config().shm_socket : "; this server has none (--shm-socket)")));
}

}  // namespace gpusort
