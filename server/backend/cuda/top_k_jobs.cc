#include "server/backend/cuda/top_k_jobs.h"

#include <string>

#include "gpusort/kernels/gather.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/backend/cuda/staging.h"
#include "server/core/status_macros.h"

namespace gpusort {

TopKJob::TopKJob(const TopKSpec& spec, KeyCoding coding, GpuKeySource& source, GpuResultSink& sink)
    : spec_(spec), coding_(coding), source_(source), sink_(sink) {}

namespace {

// SMALL_K and RADIX_SELECT select 16-bit keys as they are; the others take them zero-extended to 32
// bits. Keys already resident on the device were widened as they came, so they stay so.
KeyCoding SelectionCoding(const TopKSpec& spec, Algorithm algorithm, GpuKeySource& source) {
  KeyCoding coding{spec.dtype, spec.largest};
  coding.native_width = (algorithm == Algorithm::kSmallK || algorithm == Algorithm::kRadixSelect) &&
                        coding.key_bytes() == 2 && source.resident_keys() == nullptr;
  return coding;
}

}  // namespace

absl::Status TopKJob::Egress(const GpuJobEnv& env) {
  if (spec_.wants_values()) RETURN_IF_ERROR(sink_.EgressKeys(env, coding_, out_keys_, results()));
  if (spec_.wants_indices()) {
    RETURN_IF_ERROR(sink_.EgressPositions(env, out_positions_, results(), PositionWidth::kI64));
  }
  return absl::OkStatus();
}

TopKSelectJob::TopKSelectJob(const TopKSpec& spec, Algorithm algorithm, GpuKeySource& source, GpuResultSink& sink)
    : TopKJob(spec, SelectionCoding(spec, algorithm, source), source, sink),
      algorithm_(algorithm),
      selection_(SelectionOf(algorithm)),
      reads_in_place_(algorithm == Algorithm::kRadixSelect && source.raw_device_keys() != nullptr &&
                      coding_.device_key_bytes() == coding_.key_bytes()) {}

absl::Status TopKSelectJob::Allocate(const GpuJobEnv& env) {
  args_.key_width = coding_.width();
  args_.rows = spec_.rows;
  args_.row_length = row_length();
  args_.k = spec_.k;
  args_.sorted = spec_.sorted;
  args_.raw_keys = reads_in_place_;
  args_.raw_kind = coding_.kind();
  args_.raw_complement = coding_.complement;
  GPUSORT_RETURN_IF_KERNEL_ERROR(selection_.temp_bytes(args_, &temp_bytes_), "sizing the top-k");
  RETURN_IF_ERROR(AllocateBuffers(env, {{&keys_, reads_in_place_ ? 0 : count() * coding_.device_key_bytes()},
                                        out_keys_request(),
                                        out_positions_request(),
                                        {&temp_, temp_bytes_}}));
  args_.keys = reads_in_place_ ? source_.raw_device_keys() : keys_.data();
  args_.out_keys = spec_.wants_values() ? out_keys_.data() : nullptr;
  args_.out_positions = spec_.wants_indices() ? out_positions_.as<std::int64_t>() : nullptr;
  return absl::OkStatus();
}

absl::Status TopKSelectJob::Ingest(const GpuJobEnv& env) {
  if (!reads_in_place_) return source_.IngestKeysOnly(env, coding_, keys_.data());  // kernels find their bits
  // The caller may write its keys while the kernel's passes read them: the answer may then be wrong
  // (the proto allows that), but it must never carry another request's bytes from the pool, so every
  // result slot starts at zero.
  for (kernels::DeviceAllocation* out : {&out_keys_, &out_positions_}) {
    if (out->data() == nullptr) continue;
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::ZeroAsync(out->data(), out->size(), env.slot.stream), "clearing results");
  }
  return absl::OkStatus();
}

absl::Status TopKSelectJob::Launch(const GpuJobEnv& env) {
  GPUSORT_RETURN_IF_KERNEL_ERROR(selection_.select(args_, temp_.data(), temp_bytes_, env.slot.stream),
                                 std::string(AlgorithmName(algorithm_)) + " top-k");
  return absl::OkStatus();
}

TopKBySortJob::TopKBySortJob(const TopKSpec& spec, Algorithm algorithm, GpuKeySource& source, GpuResultSink& sink)
    : TopKJob(spec, KeyCoding{spec.dtype, spec.largest}, source, sink),
      bitonic_rows_(algorithm == Algorithm::kBitonic && spec.rows > 1 &&
                    source.count() / spec.rows <= kernels::kBitonicRowsMaxLength) {}

absl::Status TopKBySortJob::Allocate(const GpuJobEnv& env) {
  const std::size_t n = count(), key_bytes = coding_.device_key_bytes();
  std::size_t offset_bytes = 0;
  if (bitonic_rows_) {
    // In place, no temporary storage.
  } else if (spec_.by_segments()) {
    segments_.key_width = coding_.width();
    segments_.count = n;
    segments_.segments = spec_.segment_count();
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::PlanSegmentSort(spec_.segment_offsets->data(), segments_.segments,
                                                            kernels::kBitonicRowsMaxLength, &plan_),
                                   "planning the sort");
    segments_.plan = &plan_;
    offset_bytes = spec_.segment_offsets->size() * sizeof(std::int64_t);
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::SegmentSortTempBytes(segments_, &temp_bytes_), "sizing the sort");
  } else if (spec_.rows == 1) {
    whole_.key_width = coding_.width();
    whole_.payload = kernels::Payload::kIndexU32;
    whole_.count = n;
    whole_.end_bit = static_cast<int>(coding_.key_bytes() * 8);  // narrow keys: the high bits are 0
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSortTempBytes(whole_, &temp_bytes_), "sizing the sort");
  } else {
    rows_.key_width = coding_.width();
    rows_.rows = spec_.rows;
    rows_.row_length = row_length();
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RowSortTempBytes(rows_, &temp_bytes_), "sizing the row sort");
  }
  const std::size_t second = bitonic_rows_ ? 0 : 1;
  return AllocateBuffers(env, {{&keys_[0], n * key_bytes},
                               {&keys_[1], second * n * key_bytes},
                               {&positions_[0], n * 4},
                               {&positions_[1], second * n * 4},
                               {&temp_, temp_bytes_},
                               out_keys_request(),
                               out_positions_request(),
                               {&offsets_, offset_bytes},
                               {&result_offsets_, offset_bytes}});
}

absl::Status TopKBySortJob::Ingest(const GpuJobEnv& env) {
  ASSIGN_OR_RETURN(varying_, source_.IngestKeys(env, coding_, keys_[0].data()));
  if (!spec_.by_segments()) return absl::OkStatus();
  // uint64 offsets that CheckTopKShape bounded by n (< 2^31), so valid int64 as they are; spec_ keeps
  // them alive until the job ends.
  const std::size_t bytes = spec_.segment_offsets->size() * sizeof(std::uint64_t);
  GPUSORT_RETURN_IF_KERNEL_ERROR(
      kernels::CopyToDeviceAsync(offsets_.data(), spec_.segment_offsets->data(), bytes, env.slot.stream),
      "host to device");
  GPUSORT_RETURN_IF_KERNEL_ERROR(
      kernels::CopyToDeviceAsync(result_offsets_.data(), spec_.result_offsets->data(), bytes, env.slot.stream),
      "host to device");
  return absl::OkStatus();
}

absl::Status TopKBySortJob::SortRows(const kernels::Stream& stream) {
  if (spec_.by_segments()) {
    for (int i : {0, 1}) {
      segments_.keys[i] = keys_[i].data();
      segments_.indices[i] = positions_[i].data();
    }
    segments_.offsets = offsets_.as<std::int64_t>();
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::SegmentSort(segments_, temp_.data(), temp_bytes_, stream, &result_),
                                   "segmented sort");
  } else if (spec_.rows == 1) {
    for (int i : {0, 1}) {
      whole_.keys[i] = keys_[i].data();
      whole_.values[i] = positions_[i].data();
    }
    VaryingBitRange(varying_, &whole_.begin_bit, &whole_.end_bit);
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSort(whole_, temp_.data(), temp_bytes_, stream, &result_),
                                   "radix sort");
  } else if (bitonic_rows_) {
    kernels::KeyRowsArgs args;
    args.key_width = coding_.width();
    args.rows = spec_.rows;
    args.row_length = row_length();
    args.keys = keys_[0].data();
    args.positions = positions_[0].as<std::uint32_t>();
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::BitonicSortRows(args, nullptr, 0, stream), "bitonic row sort");
  } else {
    for (int i : {0, 1}) {
      rows_.keys[i] = keys_[i].data();
      rows_.indices[i] = positions_[i].data();
    }
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RowSort(rows_, temp_.data(), temp_bytes_, stream, &result_), "row sort");
  }
  return absl::OkStatus();
}

absl::Status TopKBySortJob::Launch(const GpuJobEnv& env) {
  RETURN_IF_ERROR(SortRows(env.slot.stream));
  void* out_keys = spec_.wants_values() ? out_keys_.data() : nullptr;
  auto* out_positions = spec_.wants_indices() ? out_positions_.as<std::int64_t>() : nullptr;
  if (spec_.by_segments()) {
    GPUSORT_RETURN_IF_KERNEL_ERROR(
        kernels::TakeSegmentPrefixesAsync(coding_.width(), keys_[result_].data(),
                                          positions_[result_].as<std::uint32_t>(), offsets_.as<std::int64_t>(),
                                          result_offsets_.as<std::int64_t>(), spec_.segment_count(), out_keys,
                                          out_positions, env.slot.stream),
        "taking each segment's top k");
    return absl::OkStatus();
  }
  GPUSORT_RETURN_IF_KERNEL_ERROR(
      kernels::TakeRowPrefixesAsync(coding_.width(), keys_[result_].data(), positions_[result_].as<std::uint32_t>(),
                                    spec_.rows, row_length(), spec_.k, out_keys, out_positions,
                                    env.slot.stream),
      "taking each row's top k");
  return absl::OkStatus();
}

}  // namespace gpusort
