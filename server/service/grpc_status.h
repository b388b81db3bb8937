// The one place internal absl::Status values become gRPC statuses (the codes map one to one).
#pragma once

#include <string>

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace gpusort {

inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

// "OK", "INVALID_ARGUMENT", ...: the metrics label and the log's spelling of a code.
inline std::string StatusCodeName(const absl::Status& s) {
  return absl::StatusCodeToString(s.code());
}

}  // namespace gpusort
