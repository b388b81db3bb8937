#include "server/backend/cuda/cuda_engine.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"
#include "server/backend/auto_policy.h"
#include "server/backend/cuda/comparison_sort.h"
#include "server/backend/cuda/device_context.h"
#include "server/backend/cuda/device_merged_sort.h"
#include "server/backend/cuda/device_regions.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/backend/cuda/gpu_job.h"
#include "server/backend/cuda/host_registration.h"
#include "server/backend/cuda/registered_host_ends.h"
#include "server/backend/cuda/row_sort_job.h"
#include "server/backend/cuda/sort_ingest.h"
#include "server/backend/cuda/sort_job.h"
#include "server/backend/cuda/split_upload_sort_job.h"
#include "server/backend/cuda/staged_host_ends.h"
#include "server/backend/cuda/top_k_jobs.h"
#include "server/backend/cuda/top_k_select.h"
#include "server/backend/cuda/gpu_limits.h"
#include "server/core/status_macros.h"

namespace gpusort {
namespace {


// OK for AUTO (the GPU's own choice of kernel) and the GPU algorithms; else UNIMPLEMENTED with the list
// this engine has for the method. Which engine a request goes to is the router's business
// (auto_router.h): this one runs everything it is given on the GPU.
absl::Status CheckGpuAlgorithm(std::string_view method, Algorithm asked, const std::vector<Algorithm>& available) {
  if (asked == Algorithm::kAuto || std::find(available.begin(), available.end(), asked) != available.end()) {
    return absl::OkStatus();
  }
  return AlgorithmUnavailable(method, asked, available, "cuda");
}

// The GPU algorithm a routed request runs: the one named, or radix for AUTO.
Algorithm GpuAlgorithm(Algorithm asked) { return asked == Algorithm::kAuto ? Algorithm::kRadix : asked; }

class CudaEngine final : public Backend {
 public:
  explicit CudaEngine(std::shared_ptr<DeviceContext> context) : context_(std::move(context)) {
    const auto& p = context_->properties();
    device_ = "cuda:" + std::to_string(p.ordinal) + " " + p.name;
  }

  BackendKind kind() const override { return BackendKind::kCuda; }
  std::string device() const override { return device_; }
  std::vector<Algorithm> sort_algorithms() const override {
    return {Algorithm::kRadix, Algorithm::kMerge, Algorithm::kBitonic, Algorithm::kOddEven, Algorithm::kQuicksort};
  }
  std::vector<Algorithm> topk_algorithms() const override {
    return {Algorithm::kRadix, Algorithm::kRadixSelect, Algorithm::kSmallK, Algorithm::kThreadLists};
  }

  // The GPU paths' limits, as Run meets them: a request is refused here exactly when the
  // GPU would refuse it.
  absl::Status CheckSortLimits(const SortSpec& spec, std::size_t count) const override {
    RETURN_IF_ERROR(CheckGpuSortKeys(count));
    RETURN_IF_ERROR(CheckRowSort(spec, count));
    return CheckComparisonSortSize(spec.algorithm, count);
  }
  absl::Status CheckTopKLimits(const TopKSpec& spec, std::size_t count) const override {
    if (count == 0) return absl::OkStatus();
    RETURN_IF_ERROR(CheckGpuTopKKeys(count));
    const Algorithm algorithm = spec.algorithm == Algorithm::kAuto ? ChooseTopKKernel(spec, count) : spec.algorithm;
    RETURN_IF_ERROR(CheckTopKSegments(spec, algorithm));
    return IsTopKSelection(algorithm) ? CheckTopKSelectionLimits(algorithm, spec.k) : absl::OkStatus();
  }

  // UNAVAILABLE once a job met a sticky CUDA error (DeviceContext::Watch): the process must restart.
  absl::Status Healthy() const override { return context_->Health(); }
  std::vector<DeviceServing> devices() const override {
    return {{"cuda:" + std::to_string(context_->ordinal()), context_->Health()}};
  }
  int devices_lost() const override { return context_->Health().ok() ? 0 : 1; }

  std::vector<MemoryReading> memory() const override {
    const kernels::PoolCounters c = context_->pool().Counters();
    std::size_t free_bytes = 0, total_bytes = 0;
    // The scrape's thread reads this GPU's figures, not those of whichever GPU it last used.
    if (kernels::UseDevice(context_->ordinal()).ok()) (void)kernels::DeviceMemoryInfo(&free_bytes, &total_bytes);
    const std::string device = "cuda:" + std::to_string(context_->ordinal());
    // The streams' kept blocks (StreamSlot::kept) stay with the pool's "used" even while no request
    // borrows them: shown apart, so that pool_used falls back to 0 when the load stops.
    const std::size_t kept = std::min<std::size_t>(context_->KeptOnDevice(), c.used_bytes);
    return {{device, "pool_used", static_cast<double>(c.used_bytes - kept)},
            {device, "stream_kept", static_cast<double>(kept)},
            {device, "pool_reserved", static_cast<double>(c.reserved_bytes)},
            {device, "device_used", static_cast<double>(total_bytes - free_bytes)},
            {device, "device_total", static_cast<double>(total_bytes)}};
  }

  // Every way out passes its status through context_->Watch, which notes a sticky CUDA error.
  absl::Status Run(const Job& job) override {
    if (const auto* work = std::get_if<SortWork>(&job.work)) return context_->Watch(RunSortWork(*work, job));
    return context_->Watch(RunTopKWork(std::get<TopKWork>(job.work), job));
  }
  absl::StatusOr<std::unique_ptr<HostMemoryPin>> PinHostMemory(std::span<std::byte> memory) override {
    absl::StatusOr<std::unique_ptr<HostMemoryPin>> pin = RunPinHostMemory(memory);
    if (!pin.ok()) return context_->Watch(pin.status());
    return pin;
  }
  absl::StatusOr<std::unique_ptr<DeviceMemoryImport>> ImportDeviceMemory(int fd, std::size_t bytes) override {
    absl::StatusOr<std::unique_ptr<DeviceMemoryImport>> memory = ImportForDevice(fd, bytes, context_->ordinal());
    if (!memory.ok()) return context_->Watch(memory.status());
    return memory;
  }
  std::unique_ptr<SortIngest> StartSortIngest(const SortSpec& spec) override {
    // Values of any width and the comparison sorts stay on the collect-then-sort path.
    if (spec.payload == SortPayload::kValues || spec.segmented()) return nullptr;
    if (spec.algorithm != Algorithm::kAuto && spec.algorithm != Algorithm::kRadix) return nullptr;
    return MakeCudaSortIngest(*context_, spec, device_);  // which watches its own statuses
  }

  absl::StatusOr<std::unique_ptr<PartedSortIngest>> StartPartedSortIngest(const SortSpec& spec,
                                                                          std::size_t total_keys) override {
    // As StartSortIngest: the rest gathers on the host and is sorted through Sort.
    if (spec.payload == SortPayload::kValues || spec.segmented() ||
        (spec.algorithm != Algorithm::kAuto && spec.algorithm != Algorithm::kRadix)) {
      return Backend::StartPartedSortIngest(spec, total_keys);
    }
    return MakeCudaPartedSortIngest(*context_, spec, device_, total_keys);
  }

 private:
  absl::Status RunSortWork(const SortWork& work, const Job& job) {
    switch (job.memory) {
      case Memory::kMessage:
        return SortStaged(work.spec, work.buffers, job.cancellation, job.report);
      case Memory::kRegisteredHost:
        return SortPinned(work, job);
      case Memory::kDeviceRegion:
        return SortInDeviceMemory(work.spec, work.source(), work.buffers, job.cancellation, job.report);
    }
    return absl::InternalError("a job in memory of no known kind");
  }

  // The GPU paths read each key of a registered region once, by DMA from the region itself (no private
  // copy, no staging), and write the results straight into its ranges.
  absl::Status RunTopKWork(const TopKWork& work, const Job& job) {
    const TopKBuffers& b = work.buffers;
    switch (job.memory) {
      case Memory::kMessage: {
        StagedHostKeys source(b.keys, b.count);
        StagedHostResults sink(b.values_out, b.indices_out);
        return RunTopKBetween(work.spec, source, sink, job.cancellation, job.report);
      }
      case Memory::kRegisteredHost:
      case Memory::kDeviceRegion: {
        // Issue 18: through the staging buffers a 16M f32 top-k from shared memory spent 3.2 ms in h2d,
        // where the registered path's DMA takes 1.4 ms for the same 64 MiB.
        const bool on_device = job.memory == Memory::kDeviceRegion;
        RegisteredHostKeys source(b.keys, b.count, on_device);
        RegisteredHostResults sink(b.values_out, b.indices_out, on_device);
        return RunTopKBetween(work.spec, source, sink, job.cancellation, job.report);
      }
    }
    return absl::InternalError("a job in memory of no known kind");
  }

  absl::Status SortStaged(const SortSpec& spec, const SortBuffers& buffers, const Cancellation& cancellation,
                          ExecutionReport& report) {
    RETURN_IF_ERROR(CheckGpuAlgorithm("Sort", spec.algorithm, sort_algorithms()));
    RETURN_IF_ERROR(CheckComparisonSortSize(spec.algorithm, buffers.count));
    RETURN_IF_ERROR(CheckRowSort(spec, buffers.count));
    const bool rows = spec.segmented();
    const Algorithm algorithm = rows ? RowAlgorithm(spec, buffers.count) : GpuAlgorithm(spec.algorithm);
    report.algorithm = algorithm;
    if (buffers.count == 0) return absl::OkStatus();
    RETURN_IF_ERROR(CheckGpuSortKeys(buffers.count));
    StagedHostKeys source(buffers.keys, buffers.count, buffers.values);
    StagedHostResults sink(buffers.keys, buffers.indices_out, buffers.values_out);
    if (rows) {
      RowSortJob job(spec, algorithm, source, sink);
      return RunGpuJob(*context_, job, cancellation, report);
    }
    SortJob job(spec, algorithm, source, sink);
    return RunGpuJob(*context_, job, cancellation, report);
  }

  absl::StatusOr<std::unique_ptr<HostMemoryPin>> RunPinHostMemory(std::span<std::byte> memory) {
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::UseDevice(context_->ordinal()), "selecting the GPU");
    return PinForDevice(memory);
  }

  // The kernel for a Sort of rows or segments: AUTO's choice (auto_policy.h) or the one named.
  static Algorithm RowAlgorithm(const SortSpec& spec, std::size_t count) {
    return spec.algorithm == Algorithm::kAuto ? ChooseRowSortKernel(spec, count) : GpuAlgorithm(spec.algorithm);
  }

  absl::Status SortPinned(const SortWork& work, const Job& job) {
    const SortSpec& spec = work.spec;
    const SortBuffers& buffers = work.buffers;
    const std::span<const std::byte> keys_in = work.source();
    const Cancellation& cancellation = job.cancellation;
    ExecutionReport& report = job.report;
    RETURN_IF_ERROR(CheckGpuAlgorithm("Sort", spec.algorithm, sort_algorithms()));
    // Values and the named comparison sorts of one array take the ordinary path (a private copy, then
    // the staged sort); radix sorts, rows and segments copy straight from and to the region.
    if (spec.payload == SortPayload::kValues || (!spec.segmented() && IsComparisonSort(spec.algorithm))) {
      return RunInOwnMemory(
          job, [&](const SortSpec& s, const SortBuffers& b) { return SortStaged(s, b, cancellation, report); },
          [](const TopKSpec&, const TopKBuffers&) { return absl::InternalError("not a TopK"); });
    }
    if (spec.segmented()) {
      return RunRowsOnRegisteredRanges(spec, keys_in, buffers, /*on_device=*/false, cancellation, report);
    }
    return RunRadixOnRegisteredRanges(spec, keys_in, buffers, /*on_device=*/false, cancellation, report);
  }

  // Rows or segments (RowSortJob) between registered host memory or imported device memory: the job's
  // copies go straight from and to the ranges, as the radix sort's do (issue 18: a Sort of 65536 rows
  // of 256 keys from shared memory spent 37 ms copying the region into private memory and 8 ms back).
  absl::Status RunRowsOnRegisteredRanges(const SortSpec& spec, std::span<const std::byte> keys_in,
                                         const SortBuffers& buffers, bool on_device, const Cancellation& cancellation,
                                         ExecutionReport& report) {
    RETURN_IF_ERROR(CheckRowSort(spec, buffers.count));
    report.algorithm = RowAlgorithm(spec, buffers.count);
    if (buffers.count == 0) return absl::OkStatus();
    RETURN_IF_ERROR(CheckGpuSortKeys(buffers.count));
    RegisteredHostKeys source(keys_in, buffers.count, on_device);
    RegisteredHostResults sink(buffers.keys, buffers.indices_out, on_device);
    RowSortJob job(spec, report.algorithm, source, sink);
    return RunGpuJob(*context_, job, cancellation, report);
  }

  // Keys and results in registered host memory or imported device memory (`on_device`): a radix sort
  // whose copies go straight from and to the ranges.
  absl::Status RunRadixOnRegisteredRanges(const SortSpec& spec, std::span<const std::byte> keys_in,
                                          const SortBuffers& buffers, bool on_device,
                                          const Cancellation& cancellation, ExecutionReport& report) {
    report.algorithm = Algorithm::kRadix;
    if (buffers.count == 0) return absl::OkStatus();
    RETURN_IF_ERROR(CheckGpuSortKeys(buffers.count));
    if (!on_device && SplitUploadSortJob::Takes(spec, buffers.count)) {  // sorts while the keys cross
      SplitUploadSortJob job(spec, keys_in, buffers.keys, buffers.count, SplitUploadSortJob::PartsFor(buffers.count));
      absl::Status status = RunGpuJob(*context_, job, cancellation, report);
      // For 8-byte keys it needs a third more device memory than the plain job below, which may fit.
      if (job.allocated() || status.code() != absl::StatusCode::kResourceExhausted) return status;
    }
    RegisteredHostKeys source(keys_in, buffers.count, on_device);
    RegisteredHostResults sink(buffers.keys, buffers.indices_out, on_device);
    SortJob job(spec, Algorithm::kRadix, source, sink);
    return RunGpuJob(*context_, job, cancellation, report);
  }

  // Device regions take the radix sort, rows and segments (the jobs whose ends copy from and to any
  // registered range); values and the named comparison sorts of one array would need a device-side
  // ingest of their own, and the host fallback (RunInOwnMemory) cannot read device memory.
  absl::Status SortInDeviceMemory(const SortSpec& spec, std::span<const std::byte> keys_in,
                                     const SortBuffers& buffers, const Cancellation& cancellation,
                                     ExecutionReport& report) {
    RETURN_IF_ERROR(CheckGpuAlgorithm("Sort", spec.algorithm, sort_algorithms()));
    if (spec.payload == SortPayload::kValues || (!spec.segmented() && IsComparisonSort(spec.algorithm))) {
      return absl::UnimplementedError(
          "a Sort in device regions takes keys or indices, by AUTO or RADIX (rows and segments also BITONIC); "
          "send values and the other algorithms through host memory");
    }
    if (spec.segmented()) {
      return RunRowsOnRegisteredRanges(spec, keys_in, buffers, /*on_device=*/true, cancellation, report);
    }
    return RunRadixOnRegisteredRanges(spec, keys_in, buffers, /*on_device=*/true, cancellation, report);
  }

  absl::Status RunTopKBetween(const TopKSpec& spec, GpuKeySource& source, GpuResultSink& sink,
                              const Cancellation& cancellation, ExecutionReport& report) {
    RETURN_IF_ERROR(CheckGpuAlgorithm("TopK", spec.algorithm, topk_algorithms()));
    const std::size_t count = source.count();
    const Algorithm algorithm = spec.algorithm == Algorithm::kAuto ? ChooseTopKKernel(spec, count) : spec.algorithm;
    RETURN_IF_ERROR(CheckTopKSegments(spec, algorithm));
    if (count == 0 || spec.k == 0) return absl::OkStatus();
    RETURN_IF_ERROR(CheckGpuTopKKeys(count));
    if (IsTopKSelection(algorithm)) {
      RETURN_IF_ERROR(CheckTopKSelectionLimits(algorithm, spec.k));
      report.algorithm = algorithm;
      TopKSelectJob job(spec, algorithm, source, sink);
      return RunGpuJob(*context_, job, cancellation, report);
    }
    TopKBySortJob job(spec, algorithm, source, sink);
    report.algorithm = job.algorithm();
    return RunGpuJob(*context_, job, cancellation, report);
  }

  std::shared_ptr<DeviceContext> context_;
  std::string device_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<DeviceContext>> MakeDeviceContext(const CudaEngineOptions& options) {
  std::string why_none;
  if (kernels::CountDevices(&why_none) <= options.device) {
    return absl::UnavailableError("no usable GPU: " +
                                  (why_none.empty() ? "device " + std::to_string(options.device) +
                                                          " does not exist"
                                                    : why_none));
  }
  const DeviceContextOptions context_options{
      .ordinal = options.device,
      .streams = options.streams,
      .staging_bytes = options.staging_bytes,
      .memory_limit_bytes = options.memory_limit_bytes,
      .kept_block_bytes = options.stream_memory_bytes};
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceContext> context, DeviceContext::Create(context_options));
  return std::shared_ptr<DeviceContext>(std::move(context));
}

std::unique_ptr<Backend> MakeCudaEngineOn(std::shared_ptr<DeviceContext> context) {
  return std::make_unique<CudaEngine>(std::move(context));
}

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaEngine(const CudaEngineOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<DeviceContext> context, MakeDeviceContext(options));
  return MakeCudaEngineOn(std::move(context));
}

}  // namespace gpusort
