#include "server/backend/cuda/split_upload_sort_job.h"

#include <algorithm>

#include "gpusort/kernels/key_transform.h"
#include "gpusort/kernels/sorted_runs.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/core/status_macros.h"
#include "server/core/varying_bits.h"

namespace gpusort {

bool SplitUploadSortJob::Takes(const SortSpec& spec, std::size_t count) {
  if (count < kSplitUploadMinKeys || spec.payload != SortPayload::kNone || spec.segmented()) return false;
  if (spec.algorithm != Algorithm::kAuto && spec.algorithm != Algorithm::kRadix) return false;
  const KeyCoding coding{spec.dtype, spec.order == SortOrder::kDescending};
  return coding.key_bytes() == coding.device_key_bytes() && coding.key_bytes() >= 4;
}

int SplitUploadSortJob::PartsFor(std::size_t count) { return count >= kThreePartsMinKeys ? 3 : 2; }

SplitUploadSortJob::SplitUploadSortJob(const SortSpec& spec, std::span<const std::byte> keys_in,
                                       std::span<std::byte> keys_out, std::size_t count, int parts)
    : coding_{spec.dtype, spec.order == SortOrder::kDescending}, keys_in_(keys_in), count_(count), keys_out_(keys_out) {
  // Two parts: 2/3 and 1/3. Three: 1/2, 1/3 and 1/6 (each part's sort hides under the next one's copy).
  begin_ = parts >= kMaxUploadParts ? std::vector<std::size_t>{0, count / 2, count / 2 + count / 3, count}
                                    : std::vector<std::size_t>{0, count - count / 3, count};
}

absl::Status SplitUploadSortJob::Allocate(const GpuJobEnv& env) {
  std::size_t largest = 0;
  for (int p = 0; p < parts(); ++p) largest = std::max(largest, length(p));
  kernels::RadixSortArgs sizing;
  sizing.key_width = coding_.width();
  sizing.count = largest;
  sizing.end_bit = static_cast<int>(coding_.key_bytes() * 8);
  sizing.keep_input = true;  // the parts sorted out of the landing buffer
  std::size_t keeping = 0, in_place = 0;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSortTempBytes(sizing, &keeping), "sizing the sort");
  sizing.keep_input = false;  // the parts sorted where they landed (the prefix there too)
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSortTempBytes(sizing, &in_place), "sizing the sort");
  temp_bytes_ = std::max(keeping, in_place);
  const std::size_t bytes = count_ * coding_.key_bytes();
  RETURN_IF_ERROR(AllocateBuffers(env, {{&landing_, bytes},
                                        {&runs_, bytes},
                                        {&temp_, temp_bytes_},
                                        {&or_and_, 2 * kMaxUploadParts * sizeof(std::uint64_t)}}));
  allocated_ = true;
  return absl::OkStatus();
}

absl::Status SplitUploadSortJob::Ingest(const GpuJobEnv& env) {
  StreamSlot& slot = env.slot;
  const std::size_t key_bytes = coding_.key_bytes();
  // The buffers were allocated on `stream`, and pool memory is ready only in that stream's order (the pool
  // may have made the allocation wait there for another stream's free): the side stream waits for it too.
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.side_done[0].Record(slot.stream), "recording an event");
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.side.WaitFor(slot.side_done[0]), "ordering the side stream");
  // Every part's copy on the side stream, one after the other (one DMA at a time: each part gets the
  // link's full speed and lands as early as it can).
  auto* landing = landing_.as<std::byte>();
  for (int p = 0; p < parts(); ++p) {
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(landing + begin(p) * key_bytes,
                                                         keys_in_.data() + begin(p) * key_bytes,
                                                         length(p) * key_bytes, slot.side),
                                   "host to device");
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.side_done[p].Record(slot.side), "recording an event");
  }
  // The OR/AND accumulators travel through the slot's first pinned buffer: {0, ~0} for each part.
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[0].Synchronize(), "waiting for a staging buffer");
  auto* or_and_host = reinterpret_cast<std::uint64_t*>(slot.staging[0].data());
  for (int p = 0; p < parts(); ++p) {
    or_and_host[2 * p] = 0;
    or_and_host[2 * p + 1] = ~std::uint64_t{0};
  }
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyToDeviceAsync(or_and_.data(), or_and_host,
                                                            2 * parts() * sizeof(std::uint64_t), slot.stream),
                                 "host to device");
  // Each part but the last, once it has landed, while the next ones cross.
  for (int p = 0; p + 1 < parts(); ++p) {
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.side_done[p].Synchronize(), "copying keys in");
    ASSIGN_OR_RETURN(const std::uint64_t varying, OrderPart(env, p, or_and_host));
    RETURN_IF_ERROR(SortAndMergePart(env, p, varying));
  }
  // The last part's bits once it has landed (its conversion queues behind the sorts); Launch sorts it.
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.side_done[parts() - 1].Synchronize(), "copying keys in");
  ASSIGN_OR_RETURN(varying_last_, OrderPart(env, parts() - 1, or_and_host));
  return absl::OkStatus();
}

absl::StatusOr<std::uint64_t> SplitUploadSortJob::OrderPart(const GpuJobEnv& env, int part,
                                                            std::uint64_t* or_and_host) {
  StreamSlot& slot = env.slot;
  void* keys = landing_.as<std::byte>() + begin(part) * coding_.key_bytes();
  std::uint64_t* or_and_device = or_and_.as<std::uint64_t>() + 2 * part;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::ToOrderedBitsAsync(coding_.width(), coding_.kind(), coding_.complement,
                                                             keys, length(part), or_and_device, slot.stream),
                                 "ordered bits");
  GPUSORT_RETURN_IF_KERNEL_ERROR(
      kernels::CopyToHostAsync(or_and_host + 2 * part, or_and_device, 2 * sizeof(std::uint64_t), slot.stream),
      "device to host");
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[0].Record(slot.stream), "recording an event");
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[0].Synchronize(), "reading the varying bits");
  return or_and_host[2 * part] ^ or_and_host[2 * part + 1];
}

absl::Status SplitUploadSortJob::SortAndMergePart(const GpuJobEnv& env, int part, std::uint64_t varying) {
  const std::size_t offset = begin(part) * coding_.key_bytes();
  std::byte* landed = landing_.as<std::byte>() + offset;
  std::byte* beside = runs_.as<std::byte>() + offset;
  // The part sorts next to the prefix: into runs_ when the prefix lies there (keeping its input where it
  // landed), else where it landed, with runs_ as CUB's second buffer.
  const bool into_runs = prefix_in_runs_;  // so for the first part (the prefix is empty, in runs_)
  kernels::RadixSortArgs args;
  args.key_width = coding_.width();
  args.count = length(part);
  args.keys[0] = landed;
  args.keys[1] = beside;
  args.keep_input = into_runs;
  VaryingBitRange(varying, &args.begin_bit, &args.end_bit);
  int result = 0;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSort(args, temp_.data(), temp_bytes_, env.slot.stream, &result),
                                 "radix sort");
  if (into_runs && result != 1) return absl::InternalError("the radix sort kept its answer outside the runs buffer");
  if (!into_runs && result == 1) {  // CUB's passes ended in the second buffer: back beside the prefix
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::CopyOnDeviceAsync(landed, beside, length(part) * coding_.key_bytes(), env.slot.stream),
        "device to device");
  }
  if (part == 0) return absl::OkStatus();  // sorted into runs_: the prefix now
  const kernels::DeviceAllocation& from = into_runs ? runs_ : landing_;
  kernels::DeviceAllocation& to = into_runs ? landing_ : runs_;
  prefix_in_runs_ = !into_runs;
  if (part + 1 == parts()) return SendSlices(env, from, to);
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::MergeTwoSortedRuns(coding_.width(), from.data(), begin(part),
                                                             begin(part) + length(part), to.data(), env.slot.stream),
                                 "merging a part into the sorted keys before it");
  return absl::OkStatus();
}

absl::Status SplitUploadSortJob::SendSlices(const GpuJobEnv& env, const kernels::DeviceAllocation& from,
                                            kernels::DeviceAllocation& to) {
  StreamSlot& slot = env.slot;
  const std::size_t key_bytes = coding_.key_bytes();
  const std::size_t slice = std::max(kMinSliceKeys, (count_ + kAnswerSlices - 1) / kAnswerSlices);
  for (std::size_t at = 0; at < count_; at += slice) {
    const std::size_t end = std::min(count_, at + slice);
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::MergeTwoSortedRunsSlice(coding_.width(), from.data(), begin(parts() - 1),
                                                                    count_, to.data(), at, end, slot.stream),
                                   "merging the last part into the sorted keys before it");
    std::byte* keys = to.as<std::byte>() + at * key_bytes;
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::FromOrderedBitsAsync(coding_.width(), coding_.kind(), coding_.complement,
                                                                 keys, end - at, slot.stream),
                                   "key bits");
    // The side stream copies the slice once the stream has made it (the event's state is taken now, so
    // the next slice may record it again).
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.side_done[0].Record(slot.stream), "recording an event");
    GPUSORT_RETURN_IF_KERNEL_ERROR(slot.side.WaitFor(slot.side_done[0]), "ordering the side stream");
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::CopyAnyAsync(keys_out_.data() + at * key_bytes, keys, (end - at) * key_bytes, slot.side),
        "device to host");
  }
  return absl::OkStatus();  // joined in Egress, after RunGpuJob has marked the kernels' end
}

absl::Status SplitUploadSortJob::Launch(const GpuJobEnv& env) {
  return SortAndMergePart(env, parts() - 1, varying_last_);
}

absl::Status SplitUploadSortJob::Egress(const GpuJobEnv& env) {
  // The answer left in slices as the last merge made it (SendSlices); the stream's later work and its
  // synchronize (RunGpuJob) wait for the last copy. So "d2h" is the copy out that outlasts the merge.
  StreamSlot& slot = env.slot;
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.side_done[1].Record(slot.side), "recording an event");
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.stream.WaitFor(slot.side_done[1]), "ordering the stream");
  return absl::OkStatus();
}

}  // namespace gpusort
