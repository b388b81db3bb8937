#include "server/backend/cuda/sort_ingest.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpusort/kernels/key_transform.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"
#include "server/backend/cuda/device_resident_ends.h"
#include "server/backend/cuda/gpu_job.h"
#include "server/backend/cuda/gpu_job_ends.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/backend/cuda/sort_job.h"
#include "server/backend/cuda/staging.h"
#include "server/backend/cuda/gpu_limits.h"
#include "server/core/status_macros.h"

namespace gpusort {
namespace {

// The first device buffer holds this much; it doubles from there.
constexpr std::size_t kFirstDeviceBytes = std::size_t{8} << 20;

// One class for both forms: a single stream appends in order (SortIngest), parts write their own ranges
// of a buffer sized up front (PartedSortIngest); the sort and the reads are the same.
class CudaSortIngest final : public SortIngest, public PartedSortIngest {
 public:
  CudaSortIngest(DeviceContext& context, const SortSpec& spec, std::string device_name)
      : context_(context),
        spec_(spec),
        device_name_(std::move(device_name)),
        widths_(KeyElementBytes(spec.dtype)),
        descending_(spec.order == SortOrder::kDescending) {}

  // Every way out passes its status through context_.Watch, which notes a sticky CUDA error.
  absl::Status Append(std::span<const std::byte> keys) override { return context_.Watch(AppendKeys(keys)); }
  absl::Status Reserve(std::size_t total_keys) { return context_.Watch(ReserveKeys(total_keys)); }
  absl::Status Write(std::size_t first_key, std::span<const std::byte> keys) override {
    return context_.Watch(WriteKeys(first_key, keys));
  }
  absl::Status Sort(const Cancellation& cancellation, ExecutionReport& report) override {
    return context_.Watch(SortKeys(cancellation, report));
  }
  absl::Status Read(std::size_t begin, std::size_t end, std::byte* keys, int64_t* indices) override {
    return context_.Watch(ReadKeys(begin, end, keys, indices));
  }

  // Direct mode: 32- and 64-bit keys (whose ordered bits are as wide as they are) in a pinned buffer
  // from the context's pool; none free within its cap: no direct mode.
  bool StartDirect() override {
    if (widths_.host != widths_.device || (widths_.host != 4 && widths_.host != 8)) return false;
    std::optional<PinnedPool::Loan> loan = context_.pinned_pool().Take(count_ * widths_.host);
    if (!loan) return false;
    if (!context_.Watch(StartOrAnd()).ok()) return false;
    direct_.emplace(std::move(*loan));
    return true;
  }
  std::span<std::byte> DirectKeys() override {
    return direct_ ? direct_->bytes().first(count_ * widths_.host) : std::span<std::byte>();
  }
  absl::Status CommitDirect(std::size_t first_key, std::size_t count) override {
    return context_.Watch(CommitDirectKeys(first_key, count));
  }
  absl::Status ReadDirect(std::size_t begin, std::size_t end, int64_t* indices) override {
    return context_.Watch(ReadDirectKeys(begin, end, indices));
  }

 private:
  absl::Status AppendKeys(std::span<const std::byte> keys) {
    if (keys.empty()) return absl::OkStatus();
    return ToDevice(keys);
  }

  // Parted form: the whole array's device buffer, at once (the parts then only write into it).
  absl::Status ReserveKeys(std::size_t total_keys) {
    return RunGpuStep(context_, [&](StreamSlot& slot) -> absl::Status {
      std::vector<kernels::DeviceAllocation> buffer;
      RETURN_IF_ERROR(
          context_.AllocateAll(slot.stream, {std::max<std::size_t>(1, total_keys * widths_.device)}, &buffer));
      keys_ = std::move(buffer[0]);
      count_ = total_keys;
      return absl::OkStatus();
    });
  }

  // Parted form: converts one part's piece on a slot of its own, so that parts cross side by side.
  absl::Status WriteKeys(std::size_t first_key, std::span<const std::byte> keys) {
    if (keys.empty()) return absl::OkStatus();
    StageClock clock;
    return RunGpuStep(context_, [&](StreamSlot& slot) -> absl::Status {
      KeyBitsScan scan;
      RETURN_IF_ERROR(Upload(slot, keys.data(), keys_.as<std::byte>() + first_key * widths_.device,
                             keys.size() / widths_.host, widths_, ToOrderedBitsFn(spec_.dtype, descending_, &scan)));
      GPUSORT_RETURN_IF_KERNEL_ERROR(slot.stream.Synchronize(), "host to device");
      std::lock_guard lock(parts_mutex_);
      scan_.or_bits |= scan.or_bits;
      scan_.and_bits &= scan.and_bits;
      h2d_seconds_ += clock.Seconds();  // summed over the parts: the GPU copy time, not wall time
      return absl::OkStatus();
    });
  }

  // The keys lie on the device already: the sort is a SortJob from them (device_resident_ends.h), and
  // its results stay there for ReadKeys.
  absl::Status SortKeys(const Cancellation& cancellation, ExecutionReport& report) {
    report.AddStage(Stage::kH2d, h2d_seconds_);
    const std::size_t n = count_;
    RETURN_IF_ERROR(CheckGpuSortKeys(n));
    RETURN_IF_ERROR(cancellation.Check());
    report.algorithm = Algorithm::kRadix;
    report.backend = BackendKind::kCuda;
    report.device = device_name_;
    if (n == 0) return absl::OkStatus();  // nothing came (the router never sends such a stream here)

    ASSIGN_OR_RETURN(const std::uint64_t varying, VaryingBits());
    DeviceResidentKeys source(keys_, n, varying);
    DeviceResidentResults sink;
    SortJob job(spec_, Algorithm::kRadix, source, sink);
    // Owned buffers: the sorted keys stay for ReadKeys, under later leases of any slot.
    RETURN_IF_ERROR(RunGpuJob(context_, job, cancellation, report, JobBuffers::kOwned));
    keys_ = std::move(sink.keys());
    positions_ = std::move(sink.positions());
    return absl::OkStatus();
  }

  absl::Status ReadKeys(std::size_t begin, std::size_t end, std::byte* keys, int64_t* indices) {
    if (begin >= end) return absl::OkStatus();
    return RunGpuStep(context_, [&](StreamSlot& slot) -> absl::Status {
      RETURN_IF_ERROR(Download(slot, keys_.as<std::byte>() + begin * widths_.device, keys, end - begin, widths_,
                               FromOrderedBitsFn(spec_.dtype, descending_)));
      if (indices == nullptr) return absl::OkStatus();
      return DownloadPositions(slot, positions_.as<std::uint32_t>() + begin, indices, end - begin);
    });
  }

  KeyCoding Coding() const { return KeyCoding{.dtype = spec_.dtype, .complement = descending_}; }

  // The device's OR and AND of every ordered key, {0, ~0} to start, folded by each part's conversion.
  absl::Status StartOrAnd() {
    return RunGpuStep(context_, [&](StreamSlot& slot) -> absl::Status {
      std::vector<kernels::DeviceAllocation> or_and;
      RETURN_IF_ERROR(context_.AllocateAll(slot.stream, {2 * sizeof(std::uint64_t)}, &or_and));
      const std::uint64_t start[2] = {0, ~std::uint64_t{0}};
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(or_and[0].data(), start, sizeof(start), slot.stream),
                                     "host to device");
      GPUSORT_RETURN_IF_KERNEL_ERROR(slot.stream.Synchronize(), "host to device");
      or_and_ = std::move(or_and[0]);
      return absl::OkStatus();
    });
  }

  // A part's range crosses by DMA from the pinned buffer and becomes ordered bits on the device.
  absl::Status CommitDirectKeys(std::size_t first_key, std::size_t count) {
    if (count == 0) return absl::OkStatus();
    StageClock clock;
    return RunGpuStep(context_, [&](StreamSlot& slot) -> absl::Status {
      const KeyCoding coding = Coding();
      void* device = keys_.as<std::byte>() + first_key * widths_.device;
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyToDeviceAsync(device, DirectKeys().data() + first_key * widths_.host,
                                                                count * widths_.host, slot.stream),
                                     "host to device");
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::ToOrderedBitsAsync(coding.width(), coding.kind(), coding.complement, device,
                                                                 count, or_and_.as<std::uint64_t>(), slot.stream),
                                     "ordered bits");
      GPUSORT_RETURN_IF_KERNEL_ERROR(slot.stream.Synchronize(), "host to device");
      std::lock_guard lock(parts_mutex_);
      h2d_seconds_ += clock.Seconds();
      return absl::OkStatus();
    });
  }

  // The bits that vary, from the device's OR/AND (direct mode) or the host's scan (the staged parts).
  absl::StatusOr<std::uint64_t> VaryingBits() {
    if (!direct_) return scan_.varying();
    std::uint64_t or_and[2];
    RETURN_IF_ERROR(RunGpuStep(context_, [&](StreamSlot& slot) -> absl::Status {
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(or_and, or_and_.data(), sizeof(or_and), slot.stream),
                                     "device to host");
      GPUSORT_RETURN_IF_KERNEL_ERROR(slot.stream.Synchronize(), "device to host");
      return absl::OkStatus();
    }));
    return or_and[0] ^ or_and[1];
  }

  // A range of the answer back into the pinned buffer, turned into keys on the device on its way.
  absl::Status ReadDirectKeys(std::size_t begin, std::size_t end, int64_t* indices) {
    if (begin >= end) return absl::OkStatus();
    return RunGpuStep(context_, [&](StreamSlot& slot) -> absl::Status {
      const KeyCoding coding = Coding();
      void* device = keys_.as<std::byte>() + begin * widths_.device;  // each range is read once: in place
      GPUSORT_RETURN_IF_KERNEL_ERROR(
          kernels::FromOrderedBitsAsync(coding.width(), coding.kind(), coding.complement, device, end - begin, slot.stream),
          "key bits");
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyToHostAsync(DirectKeys().data() + begin * widths_.host, device,
                                                              (end - begin) * widths_.host, slot.stream),
                                     "device to host");
      if (indices != nullptr) {
        RETURN_IF_ERROR(DownloadPositions(slot, positions_.as<std::uint32_t>() + begin, indices, end - begin));
      }
      GPUSORT_RETURN_IF_KERNEL_ERROR(slot.stream.Synchronize(), "device to host");
      return absl::OkStatus();
    });
  }

  bool with_positions() const { return spec_.payload == SortPayload::kIndices; }

  // Converts `keys` into ordered bits and appends them to the device buffer, growing it when full.
  absl::Status ToDevice(std::span<const std::byte> keys) {
    StageClock clock;
    return RunGpuStep(context_, [&](StreamSlot& slot) -> absl::Status {
      const std::size_t count = keys.size() / widths_.host;
      const std::size_t in_use = count_ * widths_.device, needed = in_use + count * widths_.device;
      if (needed > keys_.size()) {
        std::size_t capacity = std::max(keys_.size(), kFirstDeviceBytes);
        while (capacity < needed) capacity *= 2;
        std::vector<kernels::DeviceAllocation> grown;
        RETURN_IF_ERROR(context_.AllocateAll(slot.stream, {capacity}, &grown));
        if (in_use > 0) {
          GPUSORT_RETURN_IF_KERNEL_ERROR(
              kernels::CopyOnDeviceAsync(grown[0].data(), keys_.data(), in_use, slot.stream), "growing the buffer");
        }
        // The old buffer is freed in order on the stream it came from: the copy must be done first.
        GPUSORT_RETURN_IF_KERNEL_ERROR(slot.stream.Synchronize(), "growing the buffer");
        keys_ = std::move(grown[0]);
      }
      RETURN_IF_ERROR(Upload(slot, keys.data(), keys_.as<std::byte>() + in_use, count, widths_,
                             ToOrderedBitsFn(spec_.dtype, descending_, &scan_)));
      // Done before the slot goes back: the next piece may cross on another slot's stream.
      GPUSORT_RETURN_IF_KERNEL_ERROR(slot.stream.Synchronize(), "host to device");
      count_ += count;
      h2d_seconds_ += clock.Seconds();
      return absl::OkStatus();
    });
  }

  DeviceContext& context_;
  const SortSpec spec_;
  const std::string device_name_;
  const ElementBytes widths_;  // a key in the request, and its ordered bits on the device
  const bool descending_;

  kernels::DeviceAllocation keys_;   // ordered bits; after Sort, the sorted ones
  std::size_t count_ = 0;            // keys in keys_
  kernels::DeviceAllocation positions_;
  KeyBitsScan scan_;
  std::optional<PinnedPool::Loan> direct_;  // direct mode's pinned keys (StartDirect)
  kernels::DeviceAllocation or_and_;        // direct mode: the device's OR and AND of the ordered keys
  double h2d_seconds_ = 0;
  std::mutex parts_mutex_;  // parted form: scan_ and h2d_seconds_, which every part adds to
};

}  // namespace

std::unique_ptr<SortIngest> MakeCudaSortIngest(DeviceContext& context, const SortSpec& spec, std::string device_name) {
  return std::make_unique<CudaSortIngest>(context, spec, std::move(device_name));
}

absl::StatusOr<std::unique_ptr<PartedSortIngest>> MakeCudaPartedSortIngest(DeviceContext& context,
                                                                         const SortSpec& spec, std::string device_name,
                                                                         std::size_t total_keys) {
  auto ingest = std::make_unique<CudaSortIngest>(context, spec, std::move(device_name));
  RETURN_IF_ERROR(ingest->Reserve(total_keys));
  return ingest;
}

}  // namespace gpusort
