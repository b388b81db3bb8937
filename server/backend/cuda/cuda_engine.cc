#include "server/backend/cuda/cuda_engine.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/gather.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/segmented_sort.h"
#include "server/backend/auto_policy.h"
#include "server/backend/cuda/comparison_sort.h"
#include "server/backend/cuda/batch_sort.h"
#include "server/backend/cuda/device_context.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/backend/cuda/pinned_sort.h"
#include "server/backend/cuda/sort_ingest.h"
#include "server/backend/cuda/staging.h"
#include "server/backend/cuda/top_k_select.h"
#include "server/backend/cuda/gpu_limits.h"
#include "server/core/status_macros.h"

namespace gpusort {
namespace {

kernels::KeyWidth WidthOf(DType dtype) {
  return ElementSize(dtype) == 4 ? kernels::KeyWidth::k32 : kernels::KeyWidth::k64;
}


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

// Times the kernels of one job with the slot's events and adds the stages to the report.
class JobTimer {
 public:
  explicit JobTimer(StreamSlot& slot) : slot_(slot) {}
  absl::Status KernelStart() {
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot_.kernel_start.Record(slot_.stream), "recording an event");
    return absl::OkStatus();
  }
  absl::Status KernelStop() {
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot_.kernel_stop.Record(slot_.stream), "recording an event");
    return absl::OkStatus();
  }
  // After the stream is synchronized.
  double KernelSeconds() const {
    double s = 0;
    (void)slot_.kernel_stop.SecondsSince(slot_.kernel_start, &s);
    return s;
  }

 private:
  StreamSlot& slot_;
};

class CudaEngine final : public Backend {
 public:
  explicit CudaEngine(std::unique_ptr<DeviceContext> context) : context_(std::move(context)) {
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

  // The GPU paths' limits, as RunSort and RunTopK meet them: a request is refused here exactly when the
  // GPU would refuse it.
  absl::Status CheckSortLimits(const SortSpec& spec, std::size_t count) const override {
    RETURN_IF_ERROR(CheckGpuSortKeys(count));
    return CheckComparisonSortSize(spec.algorithm, count);
  }
  absl::Status CheckTopKLimits(const TopKSpec& spec, std::size_t count) const override {
    if (count == 0) return absl::OkStatus();
    RETURN_IF_ERROR(CheckGpuTopKKeys(count));
    const Algorithm algorithm = spec.algorithm == Algorithm::kAuto ? ChooseTopKKernel(spec, count) : spec.algorithm;
    return IsTopKSelection(algorithm) ? CheckTopKSelectionLimits(algorithm, spec.k) : absl::OkStatus();
  }

  // UNAVAILABLE once a job met a sticky CUDA error (DeviceContext::Watch): the process must restart.
  absl::Status Healthy() const override { return context_->Health(); }

  std::vector<MemoryReading> memory() const override {
    const kernels::PoolCounters c = context_->pool().Counters();
    std::size_t free_bytes = 0, total_bytes = 0;
    (void)kernels::DeviceMemoryInfo(&free_bytes, &total_bytes);
    const std::string device = "cuda:" + std::to_string(context_->ordinal());
    return {{device, "pool_used", static_cast<double>(c.used_bytes)},
            {device, "pool_reserved", static_cast<double>(c.reserved_bytes)},
            {device, "device_used", static_cast<double>(total_bytes - free_bytes)},
            {device, "device_total", static_cast<double>(total_bytes)}};
  }

  // Every way out passes its status through context_->Watch, which notes a sticky CUDA error.
  absl::Status Sort(const SortSpec& spec, const SortBuffers& buffers, const Cancellation& cancellation,
                    ExecutionReport& report) override {
    return context_->Watch(RunSort(spec, buffers, cancellation, report));
  }
  absl::Status SortBatch(const SortSpec& spec, std::span<BatchItem> items, const Cancellation& cancellation) override {
    return context_->Watch(RunSortBatch(spec, items, cancellation));
  }
  // One launch per batch where a batched form fits (batch_sort.h): the segmented bitonic sort of one
  // row per request (AUTO or BITONIC, requests of up to 4096 keys), else one composite radix sort (AUTO
  // or RADIX, 32-bit keys). Never values.
  bool SortsBatchTogether(const SortSpec& spec, std::span<const BatchItem> items) const override {
    return BatchForm(spec, items) != Algorithm::kAuto;
  }
  absl::StatusOr<std::unique_ptr<HostMemoryPin>> PinHostMemory(std::span<std::byte> memory) override {
    absl::StatusOr<std::unique_ptr<HostMemoryPin>> pin = RunPinHostMemory(memory);
    if (!pin.ok()) return context_->Watch(pin.status());
    return pin;
  }
  absl::Status SortPinned(const SortSpec& spec, std::span<const std::byte> keys_in, const SortBuffers& buffers,
                          const Cancellation& cancellation, ExecutionReport& report) override {
    return context_->Watch(RunSortPinned(spec, keys_in, buffers, cancellation, report));
  }
  absl::Status TopK(const TopKSpec& spec, const TopKBuffers& buffers, const Cancellation& cancellation,
                    ExecutionReport& report) override {
    return context_->Watch(RunTopK(spec, buffers, cancellation, report));
  }

  // The GPU paths read each key of the region once (staged, then converted on the device), so they
  // work on the region itself, with no private copy (Backend::TopKPinned).
  absl::Status TopKPinned(const TopKSpec& spec, const TopKBuffers& buffers, const Cancellation& cancellation,
                          ExecutionReport& report) override {
    return TopK(spec, buffers, cancellation, report);  // watched there
  }

  std::unique_ptr<SortIngest> StartSortIngest(const SortSpec& spec) override {
    // Values of any width and the comparison sorts stay on the collect-then-sort path.
    if (spec.payload == SortPayload::kValues) return nullptr;
    if (spec.algorithm != Algorithm::kAuto && spec.algorithm != Algorithm::kRadix) return nullptr;
    return MakeCudaSortIngest(*context_, spec, device_);  // which watches its own statuses
  }

  absl::StatusOr<std::unique_ptr<PartedSortIngest>> StartPartedSortIngest(const SortSpec& spec,
                                                                          std::size_t total_keys) override {
    // As StartSortIngest: the rest gathers on the host and is sorted through Sort.
    if (spec.payload == SortPayload::kValues ||
        (spec.algorithm != Algorithm::kAuto && spec.algorithm != Algorithm::kRadix)) {
      return Backend::StartPartedSortIngest(spec, total_keys);
    }
    return MakeCudaPartedSortIngest(*context_, spec, device_, total_keys);
  }

 private:
  absl::Status RunSort(const SortSpec& spec, const SortBuffers& buffers, const Cancellation& cancellation,
                       ExecutionReport& report) {
    RETURN_IF_ERROR(CheckGpuAlgorithm("Sort", spec.algorithm, sort_algorithms()));
    RETURN_IF_ERROR(CheckComparisonSortSize(spec.algorithm, buffers.count));
    report.algorithm = GpuAlgorithm(spec.algorithm);
    return SortOnGpu(spec, buffers, cancellation, report);
  }

  // The batched form that fits (SortsBatchTogether): BITONIC for rows, RADIX for the composite radix
  // sort, AUTO for none.
  static Algorithm BatchForm(const SortSpec& spec, std::span<const BatchItem> batch) {
    if (spec.payload == SortPayload::kValues) return Algorithm::kAuto;
    if ((spec.algorithm == Algorithm::kAuto && BatchFitsRows(batch)) ||
        (spec.algorithm == Algorithm::kBitonic && BatchRowLength(batch) <= kernels::kBitonicRowsMaxLength)) {
      return Algorithm::kBitonic;
    }
    if ((spec.algorithm == Algorithm::kAuto || spec.algorithm == Algorithm::kRadix) && ElementSize(spec.dtype) == 4) {
      return Algorithm::kRadix;
    }
    return Algorithm::kAuto;
  }

  // The rest (values, 64-bit keys in long requests, the other comparison sorts) goes one request at a
  // time, on the GPU; the router sends such a batch's requests one by one instead, each by its own size.
  absl::Status RunSortBatch(const SortSpec& spec, std::span<BatchItem> items, const Cancellation& cancellation) {
    RETURN_IF_ERROR(CheckGpuAlgorithm("Sort", spec.algorithm, sort_algorithms()));
    switch (BatchForm(spec, std::span<const BatchItem>(items))) {
      case Algorithm::kBitonic: return SortBatchAsRowsOnGpu(*context_, spec, items, device_);
      case Algorithm::kRadix: return SortBatchOnGpu(*context_, spec, items, device_);
      default: return Backend::SortBatch(spec, items, cancellation);
    }
  }

  absl::StatusOr<std::unique_ptr<HostMemoryPin>> RunPinHostMemory(std::span<std::byte> memory) {
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::UseDevice(context_->ordinal()), "selecting the GPU");
    return PinForDevice(memory);
  }

  absl::Status RunSortPinned(const SortSpec& spec, std::span<const std::byte> keys_in, const SortBuffers& buffers,
                             const Cancellation& cancellation, ExecutionReport& report) {
    RETURN_IF_ERROR(CheckGpuAlgorithm("Sort", spec.algorithm, sort_algorithms()));
    // The named comparison sorts take the ordinary path (copy in, Sort): regions are a radix fast path.
    if (spec.payload == SortPayload::kValues || IsComparisonSort(spec.algorithm)) {
      return Backend::SortPinned(spec, keys_in, buffers, cancellation, report);
    }
    report.algorithm = Algorithm::kRadix;
    return SortPinnedOnGpu(*context_, spec, keys_in, buffers, cancellation, report);
  }

  absl::Status RunTopK(const TopKSpec& spec, const TopKBuffers& buffers, const Cancellation& cancellation,
                       ExecutionReport& report) {
    RETURN_IF_ERROR(CheckGpuAlgorithm("TopK", spec.algorithm, topk_algorithms()));
    const Algorithm algorithm =
        spec.algorithm == Algorithm::kAuto ? ChooseTopKKernel(spec, buffers.count) : spec.algorithm;
    if (IsTopKSelection(algorithm)) {
      return SelectTopKOnGpu(*context_, algorithm, spec, buffers, cancellation, report);
    }
    return TopKOnGpu(spec, algorithm, buffers, cancellation, report);
  }

  absl::Status SortOnGpu(const SortSpec& spec, const SortBuffers& buffers, const Cancellation& cancellation,
                         ExecutionReport& report) {
    const std::size_t n = buffers.count;
    const std::size_t key_bytes = ElementSize(spec.dtype);
    if (n == 0) return absl::OkStatus();
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::UseDevice(context_->ordinal()), "selecting the GPU");
    StageClock wait;
    DeviceContext::Lease lease = context_->Acquire();
    StreamSlot& slot = lease.slot();
    report.AddStage(Stage::kStreamWait, wait.Seconds());
    RETURN_IF_ERROR(cancellation.Check());

    // The payload that rides with the keys: 4- and 8-byte values directly, positions for argsort and
    // for values of any other width (gathered by those positions after the sort).
    // The comparison sorts carry positions only, so values of every width are gathered by them.
    const Algorithm algorithm = GpuAlgorithm(spec.algorithm);
    const bool comparison = IsComparisonSort(algorithm);
    kernels::Payload payload = kernels::Payload::kNone;
    std::size_t payload_bytes = 0;
    bool gather_values = false;
    if (comparison && spec.payload == SortPayload::kValues) {
      payload = kernels::Payload::kIndexU32;
      payload_bytes = 4;
      gather_values = true;
    } else if (spec.payload == SortPayload::kIndices) {
      payload = kernels::Payload::kIndexU32;
      payload_bytes = 4;
    } else if (spec.payload == SortPayload::kValues) {
      if (spec.value_width == 4 || spec.value_width == 8) {
        payload = spec.value_width == 4 ? kernels::Payload::kU32 : kernels::Payload::kU64;
        payload_bytes = spec.value_width;
      } else {
        payload = kernels::Payload::kIndexU32;
        payload_bytes = 4;
        gather_values = true;
      }
    }
    RETURN_IF_ERROR(CheckGpuSortKeys(n));

    StageClock h2d;
    kernels::RadixSortArgs args;
    args.key_width = WidthOf(spec.dtype);
    args.payload = payload;
    args.count = n;
    // Bits: the whole key until the staging scan says which vary; temp size does not depend on them.
    args.begin_bit = 0;
    args.end_bit = static_cast<int>(key_bytes * 8);
    std::size_t temp_bytes = 0;
    if (comparison) {
      RETURN_IF_ERROR(ComparisonSortTempBytes(algorithm, args.key_width, n, payload != kernels::Payload::kNone,
                                              &temp_bytes));
    } else {
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSortTempBytes(args, &temp_bytes), "sizing the sort");
    }
    enum { kKeys0, kKeys1, kPay0, kPay1, kTemp, kValuesIn, kValuesOut };
    // The comparison sorts work in place (their scratch is in temp): no second buffers.
    const std::size_t second = comparison ? 0 : 1;
    std::vector<std::size_t> sizes = {n * key_bytes, second * n * key_bytes, n * payload_bytes,
                                      second * n * payload_bytes, temp_bytes};
    if (gather_values) {
      sizes.push_back(n * spec.value_width);
      sizes.push_back(n * spec.value_width);
    }
    std::vector<kernels::DeviceAllocation> mem;
    RETURN_IF_ERROR(context_->AllocateAll(slot.stream, sizes, &mem));
    args.keys[0] = mem[kKeys0].data();
    args.keys[1] = mem[kKeys1].data();
    args.values[0] = mem[kPay0].data();
    args.values[1] = mem[kPay1].data();

    const bool descending = spec.order == SortOrder::kDescending;
    KeyBitsScan scan;
    RETURN_IF_ERROR(Upload(slot, buffers.keys.data(), args.keys[0], n * key_bytes, key_bytes,
                           ToOrderedBitsFn(spec.dtype, descending, &scan)));
    if (payload == kernels::Payload::kU32 || payload == kernels::Payload::kU64) {
      RETURN_IF_ERROR(Upload(slot, buffers.values.data(), args.values[0], buffers.values.size(),
                             spec.value_width, PlainCopyFn()));
    } else if (gather_values) {
      RETURN_IF_ERROR(Upload(slot, buffers.values.data(), mem[kValuesIn].data(), buffers.values.size(),
                             spec.value_width, PlainCopyFn()));
    }
    VaryingBitRange(scan.varying(), &args.begin_bit, &args.end_bit);
    report.AddStage(Stage::kH2d, h2d.Seconds());
    RETURN_IF_ERROR(cancellation.Check());

    JobTimer timer(slot);
    RETURN_IF_ERROR(timer.KernelStart());
    int result = 0;
    if (comparison) {
      // Every bit is compared: the varying-bit range is a radix sort's shortcut.
      auto* positions = payload == kernels::Payload::kNone ? nullptr : static_cast<std::uint32_t*>(args.values[0]);
      RETURN_IF_ERROR(ComparisonSort(algorithm, args.key_width, n, args.keys[0], positions, mem[kTemp].data(),
                                     temp_bytes, slot.stream));
    } else {
      GPUSORT_RETURN_IF_KERNEL_ERROR(
          kernels::RadixSort(args, mem[kTemp].data(), temp_bytes, slot.stream, &result), "radix sort");
    }
    if (gather_values) {
      GPUSORT_RETURN_IF_KERNEL_ERROR(
          kernels::GatherAsync(mem[kValuesIn].data(), static_cast<const std::uint32_t*>(args.values[result]),
                               mem[kValuesOut].data(), n, spec.value_width, slot.stream),
          "gathering values");
    }
    RETURN_IF_ERROR(timer.KernelStop());

    StageClock d2h;
    RETURN_IF_ERROR(Download(slot, args.keys[result], buffers.keys.data(), n * key_bytes, key_bytes,
                             FromOrderedBitsFn(spec.dtype, descending)));
    if (spec.payload == SortPayload::kIndices) {
      int64_t* out = buffers.indices_out.data();
      RETURN_IF_ERROR(Download(slot, args.values[result], reinterpret_cast<std::byte*>(out), n * 4, 4,
                               [&](std::byte* dst, const std::byte* src, std::size_t bytes) {
                                 // dst points into `out` at the uint32 offset; widen to int64 positions.
                                 const std::size_t first = (dst - reinterpret_cast<std::byte*>(out)) / 4;
                                 WidenPositions(reinterpret_cast<const std::uint32_t*>(src), out + first,
                                                bytes / 4);
                               }));
    } else if (payload == kernels::Payload::kU32 || payload == kernels::Payload::kU64) {
      RETURN_IF_ERROR(Download(slot, args.values[result], buffers.values_out.data(), buffers.values_out.size(),
                               spec.value_width, PlainCopyFn()));
    } else if (gather_values) {
      RETURN_IF_ERROR(Download(slot, mem[kValuesOut].data(), buffers.values_out.data(),
                               buffers.values_out.size(), spec.value_width, PlainCopyFn()));
    }
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.stream.Synchronize(), "finishing the sort");
    report.AddStage(Stage::kKernel, timer.KernelSeconds());
    report.AddStage(Stage::kD2h, d2h.Seconds());
    return absl::OkStatus();
  }

  // TopK by sorting: each row's (or the array's) stable sort, then its first k. `algorithm` is RADIX (CUB:
  // a radix sort, or a segmented one for rows) or BITONIC (rows of up to 4096 keys).
  absl::Status TopKOnGpu(const TopKSpec& spec, Algorithm algorithm, const TopKBuffers& buffers,
                         const Cancellation& cancellation, ExecutionReport& report) {
    const std::size_t n = buffers.count;
    const std::size_t key_bytes = ElementSize(spec.dtype);
    const std::size_t m = n / spec.rows, k = spec.k, results = spec.rows * k;
    if (n == 0 || k == 0) return absl::OkStatus();
    RETURN_IF_ERROR(CheckGpuTopKKeys(n));
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::UseDevice(context_->ordinal()), "selecting the GPU");
    StageClock wait;
    DeviceContext::Lease lease = context_->Acquire();
    StreamSlot& slot = lease.slot();
    report.AddStage(Stage::kStreamWait, wait.Seconds());
    RETURN_IF_ERROR(cancellation.Check());

    // Largest first = ascending over complemented bits; the sort is stable, so among equal keys the
    // earlier position comes first, which is the API's tie rule.
    const bool complement = spec.largest;
    const kernels::KeyWidth width = WidthOf(spec.dtype);
    kernels::RadixSortArgs whole;  // rows == 1
    kernels::RowSortArgs rows;     // rows > 1
    // The bitonic network compares (key, position), which gives the stable order the tie rule needs.
    const bool bitonic_rows = algorithm == Algorithm::kBitonic && spec.rows > 1 && m <= kernels::kBitonicRowsMaxLength;
    report.algorithm = bitonic_rows ? Algorithm::kBitonic : Algorithm::kRadix;
    std::size_t temp_bytes = 0;
    if (bitonic_rows) {
      // In place, no temporary storage.
    } else if (spec.rows == 1) {
      whole.key_width = width;
      whole.payload = kernels::Payload::kIndexU32;
      whole.count = n;
      whole.end_bit = static_cast<int>(key_bytes * 8);
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSortTempBytes(whole, &temp_bytes), "sizing the sort");
    } else {
      rows.key_width = width;
      rows.rows = spec.rows;
      rows.row_length = m;
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RowSortTempBytes(rows, &temp_bytes), "sizing the row sort");
    }
    enum { kKeys0, kKeys1, kPos0, kPos1, kTemp, kOutKeys, kOutPos };
    std::vector<kernels::DeviceAllocation> mem;
    const std::size_t second = bitonic_rows ? 0 : 1;  // the bitonic rows sort in place
    RETURN_IF_ERROR(context_->AllocateAll(slot.stream,
                                          {n * key_bytes, second * n * key_bytes, n * 4, second * n * 4, temp_bytes,
                                           results * key_bytes, results * 8},
                                          &mem));
    StageClock h2d;
    KeyBitsScan scan;
    RETURN_IF_ERROR(Upload(slot, buffers.keys.data(), mem[kKeys0].data(), n * key_bytes, key_bytes,
                           ToOrderedBitsFn(spec.dtype, complement, &scan)));
    report.AddStage(Stage::kH2d, h2d.Seconds());
    RETURN_IF_ERROR(cancellation.Check());

    JobTimer timer(slot);
    RETURN_IF_ERROR(timer.KernelStart());
    int result = 0;
    if (spec.rows == 1) {
      whole.keys[0] = mem[kKeys0].data();
      whole.keys[1] = mem[kKeys1].data();
      whole.values[0] = mem[kPos0].data();
      whole.values[1] = mem[kPos1].data();
      VaryingBitRange(scan.varying(), &whole.begin_bit, &whole.end_bit);
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSort(whole, mem[kTemp].data(), temp_bytes, slot.stream,
                                                        &result),
                                     "radix sort");
    } else if (bitonic_rows) {
      kernels::KeyRowsArgs args;
      args.key_width = width;
      args.rows = spec.rows;
      args.row_length = m;
      args.keys = mem[kKeys0].data();
      args.positions = mem[kPos0].as<std::uint32_t>();
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::BitonicSortRows(args, nullptr, 0, slot.stream), "bitonic row sort");
    } else {
      rows.keys[0] = mem[kKeys0].data();
      rows.keys[1] = mem[kKeys1].data();
      rows.indices[0] = mem[kPos0].data();
      rows.indices[1] = mem[kPos1].data();
      GPUSORT_RETURN_IF_KERNEL_ERROR(
          kernels::RowSort(rows, mem[kTemp].data(), temp_bytes, slot.stream, &result), "row sort");
    }
    const void* sorted_keys = mem[kKeys0 + result].data();
    const auto* sorted_pos = static_cast<const std::uint32_t*>(mem[kPos0 + result].data());
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::TakeRowPrefixesAsync(width, sorted_keys, sorted_pos, spec.rows, m, k,
                                      spec.wants_values() ? mem[kOutKeys].data() : nullptr,
                                      spec.wants_indices() ? mem[kOutPos].as<std::int64_t>() : nullptr,
                                      slot.stream),
        "taking each row's top k");
    RETURN_IF_ERROR(timer.KernelStop());

    StageClock d2h;
    if (spec.wants_values()) {
      RETURN_IF_ERROR(Download(slot, mem[kOutKeys].data(), buffers.values_out.data(), results * key_bytes,
                               key_bytes, FromOrderedBitsFn(spec.dtype, complement)));
    }
    if (spec.wants_indices()) {
      RETURN_IF_ERROR(Download(slot, mem[kOutPos].data(), reinterpret_cast<std::byte*>(buffers.indices_out.data()),
                               results * 8, 8, PlainCopyFn()));
    }
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.stream.Synchronize(), "finishing the top-k");
    report.AddStage(Stage::kKernel, timer.KernelSeconds());
    report.AddStage(Stage::kD2h, d2h.Seconds());
    return absl::OkStatus();
  }

  std::unique_ptr<DeviceContext> context_;
  std::string device_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaEngine(const CudaEngineOptions& options) {
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
      .memory_limit_bytes = options.memory_limit_bytes};
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceContext> context, DeviceContext::Create(context_options));
  return std::unique_ptr<Backend>(new CudaEngine(std::move(context)));
}

}  // namespace gpusort
