#include "server/backend/cuda/row_sort_job.h"

#include <string>

#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/gather.h"
#include "gpusort/kernels/memory.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/core/status_macros.h"

namespace gpusort {

absl::Status CheckRowSort(const SortSpec& spec, std::size_t count) {
  if (!spec.segmented()) return absl::OkStatus();
  switch (spec.algorithm) {
    case Algorithm::kAuto:
    case Algorithm::kRadix: return absl::OkStatus();
    case Algorithm::kBitonic: {
      const std::size_t longest = spec.LongestSegment(count);
      if (longest <= kernels::kBitonicRowsMaxLength) return absl::OkStatus();
      return absl::InvalidArgumentError(std::string("bitonic sorts ") + (spec.segment_offsets ? "segments" : "rows") +
                                        " of at most " + std::to_string(kernels::kBitonicRowsMaxLength) + " keys; " +
                                        (spec.segment_offsets ? "a segment holds " : "these rows hold ") +
                                        std::to_string(longest) + ": use auto or radix");
    }
    default:
      return absl::InvalidArgumentError(std::string(AlgorithmName(spec.algorithm)) +
                                        " sorts one array; a Sort of rows or segments takes auto or radix (rows "
                                        "also bitonic)");
  }
}

RowSortJob::RowSortJob(const SortSpec& spec, Algorithm algorithm, GpuKeySource& source, GpuResultSink& sink)
    : spec_(spec),
      algorithm_(algorithm),
      coding_{spec.dtype, spec.order == SortOrder::kDescending},
      source_(source),
      sink_(sink) {}

absl::Status RowSortJob::Allocate(const GpuJobEnv& env) {
  const std::size_t n = count(), key_bytes = coding_.device_key_bytes();
  std::size_t offset_bytes = 0;
  if (by_offsets()) {
    by_offsets_.key_width = coding_.width();
    by_offsets_.count = n;
    by_offsets_.segments = spec_.segment_count();
    // A named RADIX is CUB's segmented sort throughout; AUTO and BITONIC sort every segment of up to
    // 4096 keys as a bitonic tile (BITONIC only gets here when all of them are).
    const std::size_t max_tile = spec_.algorithm == Algorithm::kRadix ? 0 : kernels::kBitonicRowsMaxLength;
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::PlanSegmentSort(spec_.segment_offsets->data(), by_offsets_.segments, max_tile, &plan_),
        "planning the sort");
    by_offsets_.plan = &plan_;
    offset_bytes = spec_.segment_offsets->size() * sizeof(std::int64_t);
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::SegmentSortTempBytes(by_offsets_, &temp_bytes_), "sizing the sort");
  } else if (!bitonic()) {
    segmented_.key_width = coding_.width();
    segmented_.rows = spec_.rows;
    segmented_.row_length = row_length();
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RowSortTempBytes(segmented_, &temp_bytes_), "sizing the row sort");
  }
  const std::size_t second = bitonic() ? 0 : 1;
  const std::size_t position_bytes = with_positions() ? n * 4 : 0;
  const std::size_t value_bytes = spec_.payload == SortPayload::kValues ? n * spec_.value_width : 0;
  return AllocateBuffers(env, {{&keys_[0], n * key_bytes},
                               {&keys_[1], second * n * key_bytes},
                               {&positions_[0], position_bytes},
                               {&positions_[1], second * position_bytes},
                               {&temp_, temp_bytes_},
                               {&values_in_, value_bytes},
                               {&values_out_, value_bytes},
                               {&offsets_, offset_bytes}});
}

absl::Status RowSortJob::Ingest(const GpuJobEnv& env) {
  // Every bit is sorted: the varying-bit range is the whole-array radix sort's shortcut.
  RETURN_IF_ERROR(source_.IngestKeysOnly(env, coding_, keys_[0].data()));
  if (by_offsets()) {
    // uint64 offsets that CheckSortSizes bounded by n (< 2^31), so they are valid int64 as they are.
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::CopyToDeviceAsync(offsets_.data(), spec_.segment_offsets->data(),
                                                              spec_.segment_offsets->size() * sizeof(std::uint64_t),
                                                              env.slot.stream),
                                   "host to device");
  }
  if (spec_.payload != SortPayload::kValues) return absl::OkStatus();
  return source_.IngestValues(env, values_in_.data(), count() * spec_.value_width, spec_.value_width);
}

absl::Status RowSortJob::Launch(const GpuJobEnv& env) {
  const kernels::Stream& stream = env.slot.stream;
  if (by_offsets()) return LaunchByOffsets(stream);
  if (bitonic()) {
    kernels::KeyRowsArgs args;
    args.key_width = coding_.width();
    args.rows = spec_.rows;
    args.row_length = row_length();
    args.keys = keys_[0].data();
    args.positions = with_positions() ? positions_[0].as<std::uint32_t>() : nullptr;
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::BitonicSortRows(args, nullptr, 0, stream), "bitonic row sort");
  } else {
    for (int i : {0, 1}) {
      segmented_.keys[i] = keys_[i].data();
      segmented_.indices[i] = positions_[i].data();
    }
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RowSort(segmented_, temp_.data(), temp_bytes_, stream, &result_),
                                   "row sort");
  }
  if (spec_.payload != SortPayload::kValues) return absl::OkStatus();
  // The values move by the positions, which the gather needs counted from the array's start.
  auto* positions = positions_[result_].as<std::uint32_t>();
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::OffsetRowPositionsAsync(positions, spec_.rows, row_length(), stream),
                                 "row positions");
  GPUSORT_RETURN_IF_KERNEL_ERROR(
      kernels::GatherAsync(values_in_.data(), positions, values_out_.data(), count(), spec_.value_width, stream),
      "gathering values");
  return absl::OkStatus();
}

// Positions come out of the sort global: the values are gathered by them as they are, and indices are
// made segment-relative.
absl::Status RowSortJob::LaunchByOffsets(const kernels::Stream& stream) {
  for (int i : {0, 1}) {
    by_offsets_.keys[i] = keys_[i].data();
    by_offsets_.indices[i] = positions_[i].data();
  }
  by_offsets_.offsets = offsets_.as<std::int64_t>();
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::SegmentSort(by_offsets_, temp_.data(), temp_bytes_, stream, &result_),
                                 "segmented sort");
  auto* positions = positions_[result_].as<std::uint32_t>();
  if (spec_.payload == SortPayload::kValues) {
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::GatherAsync(values_in_.data(), positions, values_out_.data(), count(), spec_.value_width, stream),
        "gathering values");
  } else if (spec_.payload == SortPayload::kIndices) {
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::SegmentRelativePositionsAsync(positions, offsets_.as<std::int64_t>(), spec_.segment_count(), stream),
        "segment positions");
  }
  return absl::OkStatus();
}

absl::Status RowSortJob::Egress(const GpuJobEnv& env) {
  RETURN_IF_ERROR(sink_.EgressKeys(env, coding_, keys_[result_], count()));
  switch (spec_.payload) {
    case SortPayload::kIndices:
      return sink_.EgressPositions(env, positions_[result_], count(), PositionWidth::kU32);
    case SortPayload::kValues:
      return sink_.EgressValues(env, values_out_.data(), count() * spec_.value_width, spec_.value_width);
    default: return absl::OkStatus();
  }
}

}  // namespace gpusort
