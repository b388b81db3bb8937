#include "server/backend/cuda/split_upload_sort_job.h"

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

SplitUploadSortJob::SplitUploadSortJob(const SortSpec& spec, std::span<const std::byte> keys_in,
                                       std::span<std::byte> keys_out, std::size_t count)
    : coding_{spec.dtype, spec.order == SortOrder::kDescending},
      keys_in_(keys_in),
      count_(count),
      part_a_(count - count / 3),
      sink_(keys_out, {}) {}

absl::Status SplitUploadSortJob::Allocate(const GpuJobEnv& env) {
  kernels::RadixSortArgs sizing;
  sizing.key_width = coding_.width();
  sizing.count = part_a_;  // the larger part
  sizing.end_bit = static_cast<int>(coding_.key_bytes() * 8);
  sizing.keep_input = true;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSortTempBytes(sizing, &temp_bytes_), "sizing the sort");
  const std::size_t bytes = count_ * coding_.key_bytes();
  RETURN_IF_ERROR(AllocateBuffers(env, {{&landing_, bytes},
                                        {&runs_, bytes},
                                        {&temp_, temp_bytes_},
                                        {&or_and_, 4 * sizeof(std::uint64_t)}}));
  allocated_ = true;
  return absl::OkStatus();
}

absl::Status SplitUploadSortJob::Ingest(const GpuJobEnv& env) {
  const absl::Status status = IngestParts(env);
  // Nothing may stay queued on the side stream once the job's buffers can go back to the pool (an
  // error between the copies and the waits for them).
  GPUSORT_RETURN_IF_KERNEL_ERROR(env.slot.side.Synchronize(), "finishing the upload");
  return status;
}

absl::Status SplitUploadSortJob::IngestParts(const GpuJobEnv& env) {
  StreamSlot& slot = env.slot;
  const std::size_t key_bytes = coding_.key_bytes();
  // Both parts' copies on the side stream, one after the other (one DMA at a time: part A gets the
  // link's full speed and lands first).
  // The buffers were allocated on `stream`, and pool memory is ready only in that stream's order (the pool
  // may have made the allocation wait there for another stream's free): the side stream waits for it too.
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.side_done[0].Record(slot.stream), "recording an event");
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.side.WaitFor(slot.side_done[0]), "ordering the side stream");
  auto* landing = landing_.as<std::byte>();
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(landing, keys_in_.data(), part_a_ * key_bytes, slot.side),
                                 "host to device");
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.side_done[0].Record(slot.side), "recording an event");
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyAnyAsync(landing + part_a_ * key_bytes,
                                                       keys_in_.data() + part_a_ * key_bytes,
                                                       part_b() * key_bytes, slot.side),
                                 "host to device");
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.side_done[1].Record(slot.side), "recording an event");
  // The OR/AND accumulators travel through the slot's first pinned buffer: {0, ~0} for each part.
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[0].Synchronize(), "waiting for a staging buffer");
  auto* or_and_host = reinterpret_cast<std::uint64_t*>(slot.staging[0].data());
  auto* or_and_device = or_and_.as<std::uint64_t>();
  for (int part : {0, 1}) {
    or_and_host[2 * part] = 0;
    or_and_host[2 * part + 1] = ~std::uint64_t{0};
  }
  GPUSORT_RETURN_IF_KERNEL_ERROR(
      kernels::CopyToDeviceAsync(or_and_device, or_and_host, 4 * sizeof(std::uint64_t), slot.stream),
      "host to device");
  // Part A, once it has landed, while part B crosses.
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.side_done[0].Synchronize(), "copying keys in");
  ASSIGN_OR_RETURN(const std::uint64_t varying_a, OrderPart(env, 0, part_a_, or_and_host, or_and_device));
  RETURN_IF_ERROR(SortPart(env, 0, part_a_, varying_a));
  // Part B's bits once it has landed (its conversion queues behind part A's sort); Launch sorts it.
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.side_done[1].Synchronize(), "copying keys in");
  ASSIGN_OR_RETURN(varying_b_, OrderPart(env, part_a_, part_b(), or_and_host + 2, or_and_device + 2));
  return absl::OkStatus();
}

absl::StatusOr<std::uint64_t> SplitUploadSortJob::OrderPart(const GpuJobEnv& env, std::size_t begin,
                                                            std::size_t count, std::uint64_t* or_and_host,
                                                            std::uint64_t* or_and_device) {
  StreamSlot& slot = env.slot;
  void* keys = landing_.as<std::byte>() + begin * coding_.key_bytes();
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::ToOrderedBitsAsync(coding_.width(), coding_.kind(), coding_.complement,
                                                             keys, count, or_and_device, slot.stream),
                                 "ordered bits");
  GPUSORT_RETURN_IF_KERNEL_ERROR(
      kernels::CopyToHostAsync(or_and_host, or_and_device, 2 * sizeof(std::uint64_t), slot.stream),
      "device to host");
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[0].Record(slot.stream), "recording an event");
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.staging_free[0].Synchronize(), "reading the varying bits");
  return or_and_host[0] ^ or_and_host[1];
}

absl::Status SplitUploadSortJob::SortPart(const GpuJobEnv& env, std::size_t begin, std::size_t count,
                                          std::uint64_t varying) {
  const std::size_t offset = begin * coding_.key_bytes();
  kernels::RadixSortArgs args;
  args.key_width = coding_.width();
  args.count = count;
  args.keys[0] = landing_.as<std::byte>() + offset;  // only read
  args.keys[1] = runs_.as<std::byte>() + offset;     // the sorted part
  args.keep_input = true;
  VaryingBitRange(varying, &args.begin_bit, &args.end_bit);
  int result = 0;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSort(args, temp_.data(), temp_bytes_, env.slot.stream, &result),
                                 "radix sort");
  if (result != 1) return absl::InternalError("the radix sort kept its answer outside the runs buffer");
  return absl::OkStatus();
}

absl::Status SplitUploadSortJob::Launch(const GpuJobEnv& env) {
  RETURN_IF_ERROR(SortPart(env, part_a_, part_b(), varying_b_));
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::MergeTwoSortedRuns(coding_.width(), runs_.data(), part_a_, count_,
                                                             landing_.data(), env.slot.stream),
                                 "merging the two sorted parts");
  return absl::OkStatus();
}

absl::Status SplitUploadSortJob::Egress(const GpuJobEnv& env) {
  return sink_.EgressKeys(env, coding_, landing_, count_);
}

}  // namespace gpusort
