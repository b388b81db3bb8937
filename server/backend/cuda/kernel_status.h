// kernels::Status -> absl::Status, at the seam between the kernels library and the server.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "gpusort/kernels/status.h"

namespace gpusort {

// Marks an INTERNAL status that came from a sticky CUDA error (kernels::StatusCode::kDeviceLost): the
// request that met it fails as INTERNAL like any other GPU failure, and the CUDA backend, seeing the
// mark on its way out (DeviceContext::Watch), stops serving for good.
inline constexpr std::string_view kDeviceLostPayload = "type.gpusort/device-lost";

inline bool IsDeviceLost(const absl::Status& s) {
  return s.GetPayload(absl::string_view(kDeviceLostPayload.data(), kDeviceLostPayload.size())).has_value();
}

inline absl::Status ToAbslStatus(const kernels::Status& s, std::string_view context = {}) {
  if (s.ok()) return absl::OkStatus();
  std::string message = context.empty() ? s.message() : std::string(context) + ": " + s.message();
  switch (s.code()) {
    case kernels::StatusCode::kOk: return absl::OkStatus();
    case kernels::StatusCode::kInvalidArgument: return absl::InvalidArgumentError(message);
    case kernels::StatusCode::kOutOfMemory: return absl::ResourceExhaustedError(message);
    case kernels::StatusCode::kUnavailable: return absl::UnavailableError(message);
    case kernels::StatusCode::kInternal: return absl::InternalError(message);
    case kernels::StatusCode::kFailedPrecondition: return absl::FailedPreconditionError(message);
    case kernels::StatusCode::kDeviceLost: {
      absl::Status lost = absl::InternalError(message);
      lost.SetPayload(absl::string_view(kDeviceLostPayload.data(), kDeviceLostPayload.size()), absl::Cord());
      return lost;
    }
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
