// gpusort.v1.EchoService: the bytes back, unchanged, so that gRPC's own cost can be measured beside a
// Sort on the same server (proto/gpusort/v1/echo.proto).
#pragma once

#include <grpcpp/grpcpp.h>

#include "gpusort/v1/echo.grpc.pb.h"
#include "server/service/auth.h"

namespace gpusort {

class EchoService final : public v1::EchoService::CallbackService {
 public:
  // `auth` (may be null: no tokens asked) must outlive the service.
  explicit EchoService(const TokenAuth* auth = nullptr) : auth_(auth) {}

  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context, const v1::EchoMessage* request,
                                 v1::EchoMessage* response) override;
  grpc::ServerBidiReactor<v1::EchoMessage, v1::EchoMessage>* EchoStream(
      grpc::CallbackServerContext* context) override;

 private:
  const TokenAuth* auth_;
};

}  // namespace gpusort
