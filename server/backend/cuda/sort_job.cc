#include "server/backend/cuda/sort_job.h"

#include "gpusort/kernels/gather.h"
#include "server/backend/cuda/comparison_sort.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/backend/cuda/staging.h"
#include "server/core/status_macros.h"

namespace gpusort {

SortJob::Carry SortJob::CarryFor(const SortSpec& spec, bool comparison) {
  switch (spec.payload) {
    case SortPayload::kIndices: return Carry::kPositions;
    case SortPayload::kValues:
      if (!comparison && (spec.value_width == 4 || spec.value_width == 8)) return Carry::kValues;
      return Carry::kGatherOrder;
    default: return Carry::kNothing;
  }
}

bool SortJob::SortsWhereKeysLie(const SortSpec& spec, bool comparison, const KeyCoding& coding,
                                GpuKeySource& source, GpuResultSink& sink) {
  if (comparison || spec.payload != SortPayload::kNone) return false;
  if (coding.kind() != kernels::KeyKind::kUnsigned || coding.complement) return false;  // bits != keys
  if (coding.device_key_bytes() != coding.key_bytes()) return false;                   // widened
  const auto* in = static_cast<const std::byte*>(source.raw_device_keys());
  const auto* out = static_cast<const std::byte*>(sink.raw_device_keys_out());
  if (in == nullptr || out == nullptr) return false;
  // CUB reads the input while it writes the output: ranges that overlap (an in-place sort) take the
  // copying path. Both are mappings in this process, so their addresses compare.
  const std::size_t bytes = source.count() * coding.key_bytes();
  return in + bytes <= out || out + bytes <= in;
}

SortJob::SortJob(const SortSpec& spec, Algorithm algorithm, GpuKeySource& source, GpuResultSink& sink)
    : spec_(spec),
      algorithm_(algorithm),
      comparison_(IsComparisonSort(algorithm)),
      carry_(CarryFor(spec, comparison_)),
      coding_{spec.dtype, spec.order == SortOrder::kDescending},
      source_(source),
      sink_(sink),
      where_keys_lie_(SortsWhereKeysLie(spec, comparison_, coding_, source, sink)) {}

std::size_t SortJob::carry_bytes() const {
  switch (carry_) {
    case Carry::kNothing: return 0;
    case Carry::kValues: return spec_.value_width;
    default: return 4;
  }
}

bool SortJob::SortsEveryBit() const {
  // A comparison sort compares every bit. A small radix sort takes every bit too: learning which bits
  // vary costs the host a wait for 16 bytes from the GPU mid-job, with the stream idle until the thread
  // wakes (tens of microseconds, more on a loaded host), while the passes it could save cost a few
  // microseconds each at these sizes.
  return comparison_ || count() * coding_.device_key_bytes() <= kSortsEveryBitUpToBytes;
}

absl::Status SortJob::Allocate(const GpuJobEnv& env) {
  const std::size_t n = count(), key_bytes = coding_.device_key_bytes();
  args_.key_width = coding_.width();
  args_.payload = carry_ == Carry::kNothing ? kernels::Payload::kNone
                  : carry_ != Carry::kValues ? kernels::Payload::kIndexU32
                  : spec_.value_width == 4   ? kernels::Payload::kU32
                                             : kernels::Payload::kU64;
  args_.count = n;
  // Bits: the whole key until the ingest says which vary; the temporary size does not depend on them.
  args_.begin_bit = 0;
  args_.end_bit = static_cast<int>(coding_.key_bytes() * 8);  // narrow keys: the high bits are 0
  args_.keep_input = where_keys_lie_;
  if (comparison_) {
    RETURN_IF_ERROR(ComparisonSortTempBytes(algorithm_, args_.key_width, n, carry_ != Carry::kNothing, &temp_bytes_));
  } else {
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSortTempBytes(args_, &temp_bytes_), "sizing the sort");
  }
  kernels::DeviceAllocation* resident = source_.resident_keys();
  if (where_keys_lie_) {
    RETURN_IF_ERROR(AllocateBuffers(env, {{&temp_, temp_bytes_}}));
    args_.keys[0] = const_cast<void*>(source_.raw_device_keys());  // only read (keep_input)
    args_.keys[1] = sink_.raw_device_keys_out();
    return absl::OkStatus();
  }
  const std::size_t second = comparison_ ? 0 : 1;
  const std::size_t gathered = carry_ == Carry::kGatherOrder ? n * spec_.value_width : 0;
  RETURN_IF_ERROR(AllocateBuffers(env, {{&keys_[0], resident != nullptr ? 0 : n * key_bytes},
                                        {&keys_[1], second * n * key_bytes},
                                        {&carried_[0], n * carry_bytes()},
                                        {&carried_[1], second * n * carry_bytes()},
                                        {&temp_, temp_bytes_},
                                        {&values_in_, gathered},
                                        {&values_out_, gathered}}));
  // Keys already on the device are sorted where they lie; the job owns their buffer from here on.
  if (resident != nullptr) keys_[0] = std::move(*resident);
  for (int i : {0, 1}) {
    args_.keys[i] = keys_[i].data();
    args_.values[i] = carried_[i].data();
  }
  return absl::OkStatus();
}

absl::Status SortJob::Ingest(const GpuJobEnv& env) {
  // Where the keys lie, only which bits vary is wanted (the sort reads them there).
  void* device_keys = where_keys_lie_ ? nullptr : keys_[0].data();
  if (SortsEveryBit()) {
    RETURN_IF_ERROR(source_.IngestKeysOnly(env, coding_, device_keys));  // args_ keeps the whole key
  } else {
    ASSIGN_OR_RETURN(const std::uint64_t varying, source_.IngestKeys(env, coding_, device_keys));
    VaryingBitRange(varying, &args_.begin_bit, &args_.end_bit);
  }
  const std::size_t value_bytes = count() * spec_.value_width;
  if (carry_ == Carry::kValues) {
    RETURN_IF_ERROR(source_.IngestValues(env, carried_[0].data(), value_bytes, spec_.value_width));
  } else if (carry_ == Carry::kGatherOrder) {
    RETURN_IF_ERROR(source_.IngestValues(env, values_in_.data(), value_bytes, spec_.value_width));
  }
  return absl::OkStatus();
}

absl::Status SortJob::Launch(const GpuJobEnv& env) {
  const kernels::Stream& stream = env.slot.stream;
  if (comparison_) {
    // Every bit is compared: the varying-bit range is a radix sort's shortcut. In place: result 0.
    auto* positions = carry_ == Carry::kNothing ? nullptr : carried_[0].as<std::uint32_t>();
    RETURN_IF_ERROR(ComparisonSort(algorithm_, args_.key_width, count(), keys_[0].data(), positions, temp_.data(),
                                   temp_bytes_, stream));
  } else {
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::RadixSort(args_, temp_.data(), temp_bytes_, stream, &result_),
                                   "radix sort");
  }
  if (carry_ == Carry::kGatherOrder) {
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::GatherAsync(values_in_.data(), carried_[result_].as<std::uint32_t>(),
                                                        values_out_.data(), count(), spec_.value_width, stream),
                                   "gathering values");
  }
  return absl::OkStatus();
}

absl::Status SortJob::Egress(const GpuJobEnv& env) {
  if (where_keys_lie_) return absl::OkStatus();  // the sort wrote the caller's output range
  RETURN_IF_ERROR(sink_.EgressKeys(env, coding_, keys_[result_], count()));
  const std::size_t value_bytes = count() * spec_.value_width;
  switch (carry_) {
    case Carry::kPositions: return sink_.EgressPositions(env, carried_[result_], count(), PositionWidth::kU32);
    case Carry::kValues: return sink_.EgressValues(env, carried_[result_].data(), value_bytes, spec_.value_width);
    case Carry::kGatherOrder: return sink_.EgressValues(env, values_out_.data(), value_bytes, spec_.value_width);
    default: return absl::OkStatus();
  }
}

}  // namespace gpusort
