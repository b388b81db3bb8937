#include "server/backend/cuda/batch_sort.h"

#include <bit>
#include <cstring>
#include <vector>

#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/runtime.h"
#include "server/backend/cuda/gpu_job.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/backend/cuda/staging.h"
#include "server/core/key_order.h"
#include "server/core/status_macros.h"

namespace gpusort {
namespace {

template <typename T>
std::uint32_t SortBitsAt(const std::byte* p, bool descending) {
  T key;
  std::memcpy(&key, p, sizeof(T));
  return ToSortBits(key, descending);
}

template <typename T>
void StoreFromSortBits(std::uint32_t bits, bool descending, std::byte* out) {
  const T key = FromSortBits<T>(static_cast<OrderedBitsType<T>>(bits), descending);
  std::memcpy(out, &key, sizeof(T));
}

}  // namespace

absl::Status SortBatchOnGpu(DeviceContext& context, const SortSpec& spec, std::span<BatchItem> items,
                            const std::string& device_name) {
  const bool descending = spec.order == SortOrder::kDescending;
  const bool with_positions = spec.payload == SortPayload::kIndices;
  std::vector<std::size_t> offsets(items.size() + 1, 0);
  for (std::size_t i = 0; i < items.size(); ++i) offsets[i + 1] = offsets[i] + items[i].buffers.count;
  const std::size_t n = offsets.back();
  if (n == 0) return absl::OkStatus();

  // Composite keys on the host (a batch is at most a million keys: a few milliseconds would be too
  // many, but this is well under one), with the bits that vary in the low half.
  StageClock prepare;
  std::vector<std::uint64_t> composite(n);
  std::uint32_t or_bits = 0, and_bits = ~std::uint32_t{0};
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::byte* keys = items[i].buffers.keys.data();
    const std::uint64_t high = static_cast<std::uint64_t>(i) << 32;
    VisitDType(spec.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (sizeof(T) <= 4) {
        for (std::size_t j = 0; j < items[i].buffers.count; ++j) {
          const std::uint32_t bits = SortBitsAt<T>(keys + j * sizeof(T), descending);
          or_bits |= bits;
          and_bits &= bits;
          composite[offsets[i] + j] = high | bits;
        }
      }
    });
  }
  const std::uint32_t varying = or_bits ^ and_bits;
  const int request_bits = items.size() > 1 ? std::bit_width(items.size() - 1) : 0;

  const double prepare_seconds = prepare.Seconds();

  kernels::RadixSortArgs args;
  args.key_width = kernels::KeyWidth::k64;
  args.payload = with_positions ? kernels::Payload::kIndexU32 : kernels::Payload::kNone;
  args.count = n;
  args.begin_bit = varying == 0 ? 32 : std::countr_zero(varying);
  args.end_bit = 32 + request_bits;
  if (args.begin_bit >= args.end_bit) args.begin_bit = args.end_bit = 0;  // one request of equal keys
  std::size_t temp_bytes = 0;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSortTempBytes(args, &temp_bytes), "sizing the sort");
  std::vector<std::uint32_t> positions(with_positions ? n : 0);
  const PackedBatch batch{.keys = std::as_writable_bytes(std::span(composite)),
                          .key_bytes = 8,
                          .positions = positions,
                          .double_buffered = true,
                          .temp_bytes = temp_bytes};
  RETURN_IF_ERROR(RunPackedBatch(
      context, batch,
      [&](const kernels::Stream& stream, void* const keys[2], void* const pos[2], void* temp, int* result) {
        for (int i : {0, 1}) {
          args.keys[i] = keys[i];
          args.values[i] = pos[i];
        }
        GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSort(args, temp, temp_bytes, stream, result), "radix sort");
        return absl::OkStatus();
      },
      items, Algorithm::kRadix, device_name, prepare_seconds));

  // Request i's answer is entries [offsets[i], offsets[i+1]): its keys, and positions less its offset.
  for (std::size_t i = 0; i < items.size(); ++i) {
    std::byte* keys = items[i].buffers.keys.data();
    VisitDType(spec.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (sizeof(T) <= 4) {
        for (std::size_t j = 0; j < items[i].buffers.count; ++j) {
          StoreFromSortBits<T>(static_cast<std::uint32_t>(composite[offsets[i] + j]), descending,
                               keys + j * sizeof(T));
        }
      }
    });
    if (with_positions) {
      for (std::size_t j = 0; j < items[i].buffers.count; ++j) {
        items[i].buffers.indices_out[j] = static_cast<std::int64_t>(positions[offsets[i] + j] - offsets[i]);
      }
    }
  }
  return absl::OkStatus();
}

namespace {

class PackedBatchJob final : public GpuJob {
 public:
  PackedBatchJob(const PackedBatch& batch, const BatchLaunch& launch) : batch_(batch), launch_(launch) {}

  absl::Status Allocate(const GpuJobEnv& env) override {
    const std::size_t bytes = batch_.keys.size(), position_bytes = batch_.positions.size() * 4;
    const std::size_t second = batch_.double_buffered ? 1 : 0;
    return AllocateBuffers(env, {{&keys_[0], bytes},
                                 {&keys_[1], second * bytes},
                                 {&positions_[0], position_bytes},
                                 {&positions_[1], second * position_bytes},
                                 {&temp_, batch_.temp_bytes}});
  }
  absl::Status Ingest(const GpuJobEnv& env) override {
    const std::size_t width = batch_.key_bytes;
    return Upload(env.slot, batch_.keys.data(), keys_[0].data(), batch_.keys.size() / width, {width, width},
                  PlainCopyFn(width));
  }
  absl::Status Launch(const GpuJobEnv& env) override {
    void* const keys[2] = {keys_[0].data(), keys_[1].data()};
    void* const positions[2] = {positions_[0].data(), positions_[1].data()};
    return launch_(env.slot.stream, keys, positions, temp_.data(), &result_);
  }
  absl::Status Egress(const GpuJobEnv& env) override {
    const std::size_t width = batch_.key_bytes;
    RETURN_IF_ERROR(Download(env.slot, keys_[result_].data(), batch_.keys.data(), batch_.keys.size() / width,
                             {width, width}, PlainCopyFn(width)));
    if (batch_.positions.empty()) return absl::OkStatus();
    return Download(env.slot, positions_[result_].data(), reinterpret_cast<std::byte*>(batch_.positions.data()),
                    batch_.positions.size(), {4, 4}, PlainCopyFn(4));
  }

 private:
  const PackedBatch& batch_;
  const BatchLaunch& launch_;
  int result_ = 0;
  kernels::DeviceAllocation keys_[2], positions_[2], temp_;
};

}  // namespace

absl::Status RunPackedBatch(DeviceContext& context, const PackedBatch& batch, const BatchLaunch& launch,
                            std::span<BatchItem> items, Algorithm algorithm, const std::string& device_name,
                            double prepare_seconds) {
  PackedBatchJob job(batch, launch);
  ExecutionReport launch_report;
  // A batch is never cancelled as a whole: its requests' callers may go, the others still wait.
  const Cancellation never;
  RETURN_IF_ERROR(RunGpuJob(context, job, never, launch_report));
  for (BatchItem& item : items) {
    ExecutionReport& report = *item.report;
    report.algorithm = algorithm;
    report.backend = BackendKind::kCuda;
    report.device = device_name;
    report.AddStage(Stage::kBatchPrepare, prepare_seconds);
    for (const StageTime& stage : launch_report.stages) report.AddStage(stage.stage, stage.seconds);
  }
  return absl::OkStatus();
}

}  // namespace gpusort
