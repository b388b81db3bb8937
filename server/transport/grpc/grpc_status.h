// The one place internal absl::Status values become gRPC statuses (the codes map one to one).
#pragma once

#include <cstddef>
#include <string>

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "server/core/caller_text.h"

namespace gpusort {

// The longest status message sent to a caller (before CallerText's escapes and note). Messages quote
// caller text only through CallerText, which bounds it; this is the last guard, because a reply whose trailers pass the client's metadata
// limit fails with RESOURCE_EXHAUSTED instead of its own status, and gRPC then fails the other calls on
// that connection too.
inline constexpr std::size_t kStatusMessageMaxBytes = 1024;

// Printable ASCII too, so that a caller's bytes that reached a message cannot drive the terminal or
// forge lines of whoever logs it on the other side.
inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      CallerText(std::string_view(s.message().data(), s.message().size()), kStatusMessageMaxBytes));
}

// "OK", "INVALID_ARGUMENT", ...: the metrics label and the log's spelling of a code.
inline std::string StatusCodeName(const absl::Status& s) {
  return absl::StatusCodeToString(s.code());
}

}  // namespace gpusort
