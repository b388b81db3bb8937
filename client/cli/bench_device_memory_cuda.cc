#include <string>

#include "client/cli/bench_device_memory.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/shared_device_memory.h"

namespace gpusort::cli {
namespace {

absl::Status FromKernels(const kernels::Status& s, const std::string& what) {
  if (s.ok()) return absl::OkStatus();
  // No GPU (or driver) here fails the whole run up front (FAILED_PRECONDITION), not each request.
  if (s.code() == kernels::StatusCode::kUnavailable) {
    return absl::FailedPreconditionError("--transport device: no usable GPU on this machine (" + what + ": " +
                                         s.message() + ")");
  }
  const auto code = s.code() == kernels::StatusCode::kInvalidArgument ? absl::StatusCode::kInvalidArgument
                    : s.code() == kernels::StatusCode::kOutOfMemory   ? absl::StatusCode::kResourceExhausted
                                                                      : absl::StatusCode::kInternal;
  return absl::Status(code, what + ": " + s.message());
}

class CudaBenchMemory final : public BenchDeviceMemory {
 public:
  absl::Status Init(std::size_t bytes, int ordinal) {
    ordinal_ = ordinal;
    // The stream and every copy on the memory's own GPU: the allocation is mapped for that GPU alone.
    if (absl::Status s = FromKernels(kernels::UseDevice(ordinal), "selecting the GPU"); !s.ok()) return s;
    if (absl::Status s = FromKernels(kernels::Stream::Create(&stream_), "a CUDA stream"); !s.ok()) return s;
    return FromKernels(kernels::ExportableDeviceMemory::Allocate(bytes, ordinal, &memory_), "device memory");
  }
  absl::StatusOr<int> ExportFd() override {
    int fd = -1;
    if (absl::Status s = FromKernels(memory_.ExportFd(&fd), "exporting device memory"); !s.ok()) return s;
    return fd;
  }
  absl::Status Write(std::size_t offset, const void* src, std::size_t bytes) override {
    return Copy(static_cast<std::byte*>(memory_.data()) + offset, src, bytes);
  }
  absl::Status Read(std::size_t offset, void* dst, std::size_t bytes) const override {
    return Copy(dst, static_cast<const std::byte*>(memory_.data()) + offset, bytes);
  }

 private:
  absl::Status Copy(void* dst, const void* src, std::size_t bytes) const {
    if (absl::Status s = FromKernels(kernels::UseDevice(ordinal_), "selecting the GPU"); !s.ok()) return s;
    if (absl::Status s = FromKernels(kernels::CopyAnyAsync(dst, src, bytes, stream_), "copying"); !s.ok()) return s;
    return FromKernels(stream_.Synchronize(), "copying");
  }

  int ordinal_ = 0;
  kernels::Stream stream_;
  kernels::ExportableDeviceMemory memory_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BenchDeviceMemory>> BenchDeviceMemory::Allocate(std::size_t bytes, int ordinal) {
  auto memory = std::make_unique<CudaBenchMemory>();
  if (absl::Status s = memory->Init(bytes, ordinal); !s.ok()) return s;
  return std::unique_ptr<BenchDeviceMemory>(std::move(memory));
}

}  // namespace gpusort::cli
