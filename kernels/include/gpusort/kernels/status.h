// The status every kernels/ call returns. Plain C++ (no CUDA, no gRPC, no absl): the server maps it to
// absl::Status at its edge (server/backend/cuda/kernel_status.h).
#pragma once

#include <string>
#include <utility>

namespace gpusort::kernels {

enum class StatusCode {
  kOk,
  kInvalidArgument,  // the call's arguments are inconsistent (a caller bug or an unsupported size)
  kOutOfMemory,      // device or pinned memory could not be had
  kUnavailable,      // no usable device, driver missing or too old
  kInternal,         // any other CUDA error, with its name and text
  kFailedPrecondition,  // the system is not in the state the call needs (a peer GPU it cannot reach)
  // A sticky CUDA error (an illegal address, a launch failure, an uncorrectable ECC error, ...): the
  // device's context is unusable for the rest of this process, every later CUDA call fails with the
  // same error, and only a new process recovers (kernels/src/cuda_status.h has the list).
  kDeviceLost,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace gpusort::kernels

// Returns early from the enclosing function when a kernels::Status is not ok.
#define GPUSORT_KERNELS_RETURN_IF_ERROR(expr)          \
  do {                                                 \
    ::gpusort::kernels::Status _gpusort_status = (expr); \
    if (!_gpusort_status.ok()) return _gpusort_status; \
  } while (0)
