// kernels::Status -> absl::Status, at the seam between the kernels library and the server.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "gpusort/kernels/status.h"

namespace gpusort {

inline absl::Status ToAbslStatus(const kernels::Status& s, std::string_view context = {}) {
  if (s.ok()) return absl::OkStatus();
  std::string message = context.empty() ? s.message() : std::string(context) + ": " + s.message();
  switch (s.code()) {
    case kernels::StatusCode::kOk: return absl::OkStatus();
    case kernels::StatusCode::kInvalidArgument: return absl::InvalidArgumentError(message);
    case kernels::StatusCode::kOutOfMemory: return absl::ResourceExhaustedError(message);
    case kernels::StatusCode::kUnavailable: return absl::UnavailableError(message);
    case kernels::StatusCode::kInternal: return absl::InternalError(message);
  }
  return absl::InternalError(message);
}

}  // namespace gpusort

#define GPUSORT_RETURN_IF_KERNEL_ERROR(expr, context)                                \
  do {                                                                               \
    ::gpusort::kernels::Status _gpusort_kernel_status = (expr);                      \
    if (!_gpusort_kernel_status.ok())                                                \
      return ::gpusort::ToAbslStatus(_gpusort_kernel_status, context);               \
  } while (0)
