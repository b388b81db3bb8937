#include "client/src/proto_convert.h"

namespace gpusort::client_internal {
namespace {

// Each value of gpusort/types.h is its proto value's number: this is what makes the static_casts of
// proto_convert.h right. A value added to one side only is caught by tests/client/proto_convert_test.cc.
static_assert(static_cast<int>(client::DType::kUnspecified) == v1::DTYPE_UNSPECIFIED);
static_assert(static_cast<int>(client::DType::kInt32) == v1::DTYPE_INT32);
static_assert(static_cast<int>(client::DType::kUint32) == v1::DTYPE_UINT32);
static_assert(static_cast<int>(client::DType::kInt64) == v1::DTYPE_INT64);
static_assert(static_cast<int>(client::DType::kUint64) == v1::DTYPE_UINT64);
static_assert(static_cast<int>(client::DType::kFloat32) == v1::DTYPE_FLOAT32);
static_assert(static_cast<int>(client::DType::kFloat64) == v1::DTYPE_FLOAT64);
static_assert(static_cast<int>(client::DType::kFloat16) == v1::DTYPE_FLOAT16);
static_assert(static_cast<int>(client::DType::kBFloat16) == v1::DTYPE_BFLOAT16);
static_assert(static_cast<int>(client::DType::kInt16) == v1::DTYPE_INT16);
static_assert(static_cast<int>(client::DType::kUint16) == v1::DTYPE_UINT16);
static_assert(static_cast<int>(client::DType::kInt8) == v1::DTYPE_INT8);
static_assert(static_cast<int>(client::DType::kUint8) == v1::DTYPE_UINT8);

static_assert(static_cast<int>(client::Algorithm::kAuto) == v1::ALGORITHM_AUTO);
static_assert(static_cast<int>(client::Algorithm::kRadix) == v1::ALGORITHM_RADIX);
static_assert(static_cast<int>(client::Algorithm::kMerge) == v1::ALGORITHM_MERGE);
static_assert(static_cast<int>(client::Algorithm::kBitonic) == v1::ALGORITHM_BITONIC);
static_assert(static_cast<int>(client::Algorithm::kOddEven) == v1::ALGORITHM_ODD_EVEN);
static_assert(static_cast<int>(client::Algorithm::kQuicksort) == v1::ALGORITHM_QUICKSORT);
static_assert(static_cast<int>(client::Algorithm::kCpu) == v1::ALGORITHM_CPU);
static_assert(static_cast<int>(client::Algorithm::kRadixSelect) == v1::ALGORITHM_RADIX_SELECT);
static_assert(static_cast<int>(client::Algorithm::kSmallK) == v1::ALGORITHM_SMALL_K);
static_assert(static_cast<int>(client::Algorithm::kThreadLists) == v1::ALGORITHM_THREAD_LISTS);

static_assert(static_cast<int>(client::Payload::kNone) == v1::PAYLOAD_NONE);
static_assert(static_cast<int>(client::Payload::kValues) == v1::PAYLOAD_VALUES);
static_assert(static_cast<int>(client::Payload::kIndices) == v1::PAYLOAD_INDICES);

static_assert(static_cast<int>(client::TopKOutput::kValuesAndIndices) == v1::TOPK_OUTPUT_VALUES_AND_INDICES);
static_assert(static_cast<int>(client::TopKOutput::kValues) == v1::TOPK_OUTPUT_VALUES);
static_assert(static_cast<int>(client::TopKOutput::kIndices) == v1::TOPK_OUTPUT_INDICES);

static_assert(static_cast<int>(client::Backend::kUnspecified) == v1::BACKEND_UNSPECIFIED);
static_assert(static_cast<int>(client::Backend::kCpu) == v1::BACKEND_CPU);
static_assert(static_cast<int>(client::Backend::kCuda) == v1::BACKEND_CUDA);

}  // namespace

v1::RegionRef ToProto(const client::RegionRef& ref) {
  v1::RegionRef out;
  out.set_region_id(ref.region_id);
  out.set_offset(ref.offset);
  out.set_length(ref.length);
  return out;
}

client::RegionRef FromProto(const v1::RegionRef& ref) {
  return client::RegionRef{.region_id = ref.region_id(), .offset = ref.offset(), .length = ref.length()};
}

v1::ExecutionInfo ToProto(const client::ExecutionInfo& info) {
  v1::ExecutionInfo out;
  out.set_algorithm(ToProto(info.algorithm));
  out.set_backend(ToProto(info.backend));
  out.set_device(info.device);
  for (const client::StageTime& s : info.stages) {
    v1::StageTime* stage = out.add_stages();
    stage->set_stage(s.stage);
    stage->set_seconds(s.seconds);
  }
  out.set_server_seconds(info.server_seconds);
  out.set_request_id(info.request_id);
  return out;
}

client::ExecutionInfo FromProto(const v1::ExecutionInfo& info) {
  client::ExecutionInfo out;
  out.algorithm = FromProto(info.algorithm());
  out.backend = FromProto(info.backend());
  out.device = info.device();
  out.stages.reserve(info.stages_size());
  for (const v1::StageTime& s : info.stages()) out.stages.push_back({.stage = s.stage(), .seconds = s.seconds()});
  out.server_seconds = info.server_seconds();
  out.request_id = info.request_id();
  return out;
}

void FillSortOptions(const RawSortRequest& r, v1::SortOptions* o) {
  o->set_dtype(ToProto(r.dtype));
  o->set_order(r.options.descending ? v1::ORDER_DESCENDING : v1::ORDER_ASCENDING);
  o->set_stable(r.options.stable);
  o->set_payload(ToProto(r.payload));
  o->set_value_width(r.value_width);
  o->set_algorithm(ToProto(r.options.algorithm));
  o->set_rows(r.options.rows);
  if (!r.options.segment_offsets.empty()) {
    o->set_segment_offsets(reinterpret_cast<const char*>(r.options.segment_offsets.data()),
                           r.options.segment_offsets.size_bytes());
  }
}

void FillTopKOptions(client::DType dtype, const TopKOptions& t, v1::TopKOptions* o) {
  o->set_dtype(ToProto(dtype));
  o->set_k(t.k);
  o->set_largest(t.largest);
  o->set_sorted(t.sorted);
  o->set_output(ToProto(t.output));
  o->set_rows(t.rows);
  o->set_algorithm(ToProto(t.algorithm));
  if (!t.segment_offsets.empty()) {
    o->set_segment_offsets(reinterpret_cast<const char*>(t.segment_offsets.data()), t.segment_offsets.size_bytes());
  }
}

}  // namespace gpusort::client_internal
