#include "server/transport/request_decode.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "server/core/status_macros.h"

namespace gpusort {
namespace {

constexpr std::size_t kMaxValueWidth = 256;

absl::StatusOr<DType> DecodeDType(v1::DType d) {
  switch (d) {
    case v1::DTYPE_INT32: return DType::kInt32;
    case v1::DTYPE_UINT32: return DType::kUInt32;
    case v1::DTYPE_INT64: return DType::kInt64;
    case v1::DTYPE_UINT64: return DType::kUInt64;
    case v1::DTYPE_FLOAT32: return DType::kFloat32;
    case v1::DTYPE_FLOAT64: return DType::kFloat64;
    case v1::DTYPE_FLOAT16: return DType::kFloat16;
    case v1::DTYPE_BFLOAT16: return DType::kBFloat16;
    case v1::DTYPE_INT16: return DType::kInt16;
    case v1::DTYPE_UINT16: return DType::kUInt16;
    case v1::DTYPE_INT8: return DType::kInt8;
    case v1::DTYPE_UINT8: return DType::kUInt8;
    default: break;
  }
  return absl::InvalidArgumentError(
      "options.dtype " + std::to_string(static_cast<int>(d)) +
      " is not a known dtype (INT32, UINT32, INT64, UINT64, FLOAT32, FLOAT64, FLOAT16, BFLOAT16, INT16, "
      "UINT16, INT8 or UINT8 required)");
}

absl::StatusOr<Algorithm> DecodeAlgorithm(v1::Algorithm a) {
  switch (a) {
    case v1::ALGORITHM_AUTO: return Algorithm::kAuto;
    case v1::ALGORITHM_RADIX: return Algorithm::kRadix;
    case v1::ALGORITHM_MERGE: return Algorithm::kMerge;
    case v1::ALGORITHM_BITONIC: return Algorithm::kBitonic;
    case v1::ALGORITHM_ODD_EVEN: return Algorithm::kOddEven;
    case v1::ALGORITHM_QUICKSORT: return Algorithm::kQuicksort;
    case v1::ALGORITHM_CPU: return Algorithm::kCpu;
    case v1::ALGORITHM_RADIX_SELECT: return Algorithm::kRadixSelect;
    case v1::ALGORITHM_SMALL_K: return Algorithm::kSmallK;
    case v1::ALGORITHM_THREAD_LISTS: return Algorithm::kThreadLists;
    default: break;
  }
  return absl::InvalidArgumentError("options.algorithm " + std::to_string(static_cast<int>(a)) +
                                    " is not a known algorithm");
}

// S + 1 little-endian uint64 offsets, the first 0, never decreasing (the last must be n: CheckSortSizes).
absl::StatusOr<std::shared_ptr<const std::vector<std::uint64_t>>> DecodeSegmentOffsets(const std::string& bytes) {
  if (bytes.size() % 8 != 0 || bytes.size() < 16) {
    return absl::InvalidArgumentError("options.segment_offsets holds " + std::to_string(bytes.size()) +
                                      " bytes: it must be at least two little-endian uint64 offsets (8 bytes each)");
  }
  auto offsets = std::make_shared<std::vector<std::uint64_t>>(bytes.size() / 8);
  std::memcpy(offsets->data(), bytes.data(), bytes.size());
  if ((*offsets)[0] != 0) {
    return absl::InvalidArgumentError("options.segment_offsets must start at 0, not " + std::to_string((*offsets)[0]));
  }
  for (std::size_t s = 1; s < offsets->size(); ++s) {
    if ((*offsets)[s] < (*offsets)[s - 1]) {
      return absl::InvalidArgumentError("options.segment_offsets decreases at entry " + std::to_string(s) + " (" +
                                        std::to_string((*offsets)[s - 1]) + " then " +
                                        std::to_string((*offsets)[s]) + ")");
    }
  }
  return std::shared_ptr<const std::vector<std::uint64_t>>(std::move(offsets));
}

}  // namespace

v1::Algorithm ToProto(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto: return v1::ALGORITHM_AUTO;
    case Algorithm::kRadix: return v1::ALGORITHM_RADIX;
    case Algorithm::kMerge: return v1::ALGORITHM_MERGE;
    case Algorithm::kBitonic: return v1::ALGORITHM_BITONIC;
    case Algorithm::kOddEven: return v1::ALGORITHM_ODD_EVEN;
    case Algorithm::kQuicksort: return v1::ALGORITHM_QUICKSORT;
    case Algorithm::kCpu: return v1::ALGORITHM_CPU;
    case Algorithm::kRadixSelect: return v1::ALGORITHM_RADIX_SELECT;
    case Algorithm::kSmallK: return v1::ALGORITHM_SMALL_K;
    case Algorithm::kThreadLists: return v1::ALGORITHM_THREAD_LISTS;
  }
  return v1::ALGORITHM_AUTO;
}

absl::StatusOr<SortSpec> DecodeSortOptions(const v1::SortOptions& o) {
  SortSpec spec;
  auto dtype = DecodeDType(o.dtype());
  if (!dtype.ok()) return dtype.status();
  spec.dtype = *dtype;
  switch (o.order()) {
    case v1::ORDER_ASCENDING: spec.order = SortOrder::kAscending; break;
    case v1::ORDER_DESCENDING: spec.order = SortOrder::kDescending; break;
    default:
      return absl::InvalidArgumentError("options.order " + std::to_string(o.order()) +
                                        " is not ASCENDING or DESCENDING");
  }
  spec.stable = o.stable();
  switch (o.payload()) {
    case v1::PAYLOAD_NONE: spec.payload = SortPayload::kNone; break;
    case v1::PAYLOAD_VALUES: spec.payload = SortPayload::kValues; break;
    case v1::PAYLOAD_INDICES: spec.payload = SortPayload::kIndices; break;
    default:
      return absl::InvalidArgumentError("options.payload " + std::to_string(o.payload()) +
                                        " is not NONE, VALUES or INDICES");
  }
  if (spec.payload == SortPayload::kValues) {
    if (o.value_width() == 0 || o.value_width() > kMaxValueWidth)
      return absl::InvalidArgumentError("options.value_width must be 1 to " +
                                        std::to_string(kMaxValueWidth) +
                                        " bytes with PAYLOAD_VALUES, got " +
                                        std::to_string(o.value_width()));
    spec.value_width = o.value_width();
  } else if (o.value_width() != 0) {
    return absl::InvalidArgumentError("options.value_width is set but options.payload is not "
                                      "PAYLOAD_VALUES");
  }
  auto algorithm = DecodeAlgorithm(o.algorithm());
  if (!algorithm.ok()) return algorithm.status();
  spec.algorithm = *algorithm;
  spec.rows = o.rows() == 0 ? 1 : o.rows();
  if (!o.segment_offsets().empty()) {
    ASSIGN_OR_RETURN(spec.segment_offsets, DecodeSegmentOffsets(o.segment_offsets()));
    if (spec.rows > 1) return absl::InvalidArgumentError("options.rows and options.segment_offsets exclude each other");
  }
  return spec;
}

absl::StatusOr<TopKSpec> DecodeTopKOptions(const v1::TopKOptions& o) {
  TopKSpec spec;
  auto dtype = DecodeDType(o.dtype());
  if (!dtype.ok()) return dtype.status();
  spec.dtype = *dtype;
  if (o.k() == 0) return absl::InvalidArgumentError("options.k must be at least 1");
  spec.k = o.k();
  spec.largest = o.largest();
  spec.sorted = o.sorted();
  switch (o.output()) {
    case v1::TOPK_OUTPUT_VALUES_AND_INDICES: spec.output = TopKOutput::kValuesAndIndices; break;
    case v1::TOPK_OUTPUT_VALUES: spec.output = TopKOutput::kValues; break;
    case v1::TOPK_OUTPUT_INDICES: spec.output = TopKOutput::kIndices; break;
    default:
      return absl::InvalidArgumentError("options.output " + std::to_string(o.output()) +
                                        " is not VALUES_AND_INDICES, VALUES or INDICES");
  }
  spec.rows = o.rows() == 0 ? 1 : o.rows();
  auto algorithm = DecodeAlgorithm(o.algorithm());
  if (!algorithm.ok()) return algorithm.status();
  spec.algorithm = *algorithm;
  if (!o.segment_offsets().empty()) {
    ASSIGN_OR_RETURN(auto offsets, DecodeSegmentOffsets(o.segment_offsets()));
    if (spec.rows > 1) return absl::InvalidArgumentError("options.rows and options.segment_offsets exclude each other");
    spec.SetSegments(std::move(offsets));
  }
  return spec;
}

absl::StatusOr<std::size_t> CheckSortSizes(const SortSpec& spec, std::size_t key_bytes,
                                           std::size_t value_bytes) {
  const std::size_t width = ElementSize(spec.dtype);
  if (key_bytes % width != 0)
    return absl::InvalidArgumentError(
        "keys hold " + std::to_string(key_bytes) + " bytes, not a whole number of " +
        std::to_string(width) + "-byte " + std::string(DTypeName(spec.dtype)) + " elements");
  const std::size_t n = key_bytes / width;
  if (n % spec.rows != 0)
    return absl::InvalidArgumentError("options.rows " + std::to_string(spec.rows) + " does not divide the " +
                                      std::to_string(n) + " keys");
  if (spec.segment_offsets != nullptr && spec.segment_offsets->back() != n)
    return absl::InvalidArgumentError("options.segment_offsets ends at " +
                                      std::to_string(spec.segment_offsets->back()) + ", not at the " +
                                      std::to_string(n) + " keys");
  if (spec.payload == SortPayload::kValues) {
    if (value_bytes != n * spec.value_width)
      return absl::InvalidArgumentError(
          "values hold " + std::to_string(value_bytes) + " bytes; " + std::to_string(n) +
          " keys with value_width " + std::to_string(spec.value_width) + " need " +
          std::to_string(n * spec.value_width));
  } else if (value_bytes != 0) {
    return absl::InvalidArgumentError("values were sent but options.payload is not PAYLOAD_VALUES");
  }
  return n;
}

absl::StatusOr<std::size_t> CheckTopKShape(const TopKSpec& spec, std::size_t key_bytes) {
  const std::size_t width = ElementSize(spec.dtype);
  if (key_bytes % width != 0)
    return absl::InvalidArgumentError(
        "keys hold " + std::to_string(key_bytes) + " bytes, not a whole number of " +
        std::to_string(width) + "-byte " + std::string(DTypeName(spec.dtype)) + " elements");
  const std::size_t n = key_bytes / width;
  if (spec.by_segments()) {
    if (spec.segment_offsets->back() != n)
      return absl::InvalidArgumentError("options.segment_offsets ends at " +
                                        std::to_string(spec.segment_offsets->back()) + ", not at the " +
                                        std::to_string(n) + " keys");
    return n;  // any k: a segment shorter than k yields all its keys
  }
  if (n % spec.rows != 0)
    return absl::InvalidArgumentError("options.rows " + std::to_string(spec.rows) +
                                      " does not divide the " + std::to_string(n) + " keys");
  const std::size_t row_length = n / spec.rows;
  if (spec.k > row_length)
    return absl::InvalidArgumentError("options.k " + std::to_string(spec.k) +
                                      " is larger than the row length " +
                                      std::to_string(row_length));
  return n;
}

std::size_t SortResponseBytes(const SortSpec& spec, std::size_t count) {
  std::size_t bytes = count * ElementSize(spec.dtype);
  if (spec.payload == SortPayload::kValues) bytes += count * spec.value_width;
  if (spec.payload == SortPayload::kIndices) bytes += count * sizeof(int64_t);
  return bytes;
}

std::size_t TopKResponseBytes(const TopKSpec& spec) {
  const std::size_t results = spec.results();
  std::size_t bytes = 0;
  if (spec.wants_values()) bytes += results * ElementSize(spec.dtype);
  if (spec.wants_indices()) bytes += results * sizeof(int64_t);
  return bytes;
}

absl::Status CheckSortInParts(const SortSpec& spec, uint64_t total_keys, std::string_view total_text,
                              std::string_view method, std::size_t max_request_bytes) {
  if (spec.payload == SortPayload::kValues) {
    return absl::InvalidArgumentError(std::string(method) +
                                      " carries keys only (or PAYLOAD_INDICES); send keys with values on one SortStream");
  }
  if (total_keys % spec.rows != 0) {
    return absl::InvalidArgumentError("options.rows " + std::to_string(spec.rows) + " does not divide " +
                                      std::string(total_text));
  }
  if (spec.segment_offsets != nullptr && spec.segment_offsets->back() != total_keys) {
    return absl::InvalidArgumentError("options.segment_offsets ends at " +
                                      std::to_string(spec.segment_offsets->back()) + ", not at " +
                                      std::string(total_text));
  }
  if (total_keys > max_request_bytes / ElementSize(spec.dtype)) {
    return absl::ResourceExhaustedError(std::string(total_text) + " would be over the server's request limit of " +
                                        std::to_string(max_request_bytes) + " bytes");
  }
  return absl::OkStatus();
}

}  // namespace gpusort
