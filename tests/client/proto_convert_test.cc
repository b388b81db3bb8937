// client/src/proto_convert.h: the client's own types (gpusort/types.h) and sort.proto's agree value for
// value and field for field. Each enum is walked through the proto's descriptor, so a value added to
// sort.proto that gpusort::client lacks fails here (and one added to gpusort::client alone too); the
// messages are checked field by field through reflection, so a field the proto gains fails here until
// the conversion (and this test) carry it.
#include "client/src/proto_convert.h"

#include <string>
#include <string_view>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <gtest/gtest.h>

namespace gpusort::client_internal {
namespace {

using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Every value of the proto enum converts to the gpusort::client value of the same name and number, and
// back to itself.
template <typename ClientEnum, typename ProtoEnum>
void ExpectEveryProtoValueHasAClientValue(const EnumDescriptor* descriptor) {
  ASSERT_GT(descriptor->value_count(), 0);
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const std::string& name = descriptor->value(i)->name();
    const auto proto = static_cast<ProtoEnum>(descriptor->value(i)->number());
    const ClientEnum ours = FromProto(proto);
    EXPECT_EQ(client::WireName(ours), name) << "sort.proto's " << name << " has no gpusort::client value";
    EXPECT_EQ(ToProto(ours), proto) << name;
  }
}

// Every value gpusort::client names (WireName not empty) is one of the proto's, by number and name. The
// numbers tried cover every range sort.proto reserves (top-k algorithms end at 63).
template <typename ClientEnum>
void ExpectEveryClientValueIsInTheProto(const EnumDescriptor* descriptor) {
  int named = 0;
  for (int number = -8; number < 256; ++number) {
    const std::string_view name = client::WireName(static_cast<ClientEnum>(number));
    if (name.empty()) continue;
    ++named;
    const auto* value = descriptor->FindValueByNumber(number);
    ASSERT_NE(value, nullptr) << name << " (" << number << ") is not in sort.proto";
    EXPECT_EQ(value->name(), name);
  }
  EXPECT_EQ(named, descriptor->value_count());
}

template <typename ClientEnum, typename ProtoEnum>
void ExpectTheSameValues(const EnumDescriptor* descriptor) {
  SCOPED_TRACE(descriptor->full_name());
  ExpectEveryProtoValueHasAClientValue<ClientEnum, ProtoEnum>(descriptor);
  ExpectEveryClientValueIsInTheProto<ClientEnum>(descriptor);
}

TEST(ProtoConvert, EveryEnumHasTheProtosValuesAndNoOthers) {
  ExpectTheSameValues<client::DType, v1::DType>(v1::DType_descriptor());
  ExpectTheSameValues<client::Algorithm, v1::Algorithm>(v1::Algorithm_descriptor());
  ExpectTheSameValues<client::Payload, v1::Payload>(v1::Payload_descriptor());
  ExpectTheSameValues<client::TopKOutput, v1::TopKOutput>(v1::TopKOutput_descriptor());
  ExpectTheSameValues<client::Backend, v1::Backend>(v1::Backend_descriptor());
}

// A number a newer server may answer (not in this proto) keeps its number both ways.
TEST(ProtoConvert, AnUnknownNumberKeepsItsNumber) {
  const auto unknown = static_cast<v1::Algorithm>(63);
  ASSERT_FALSE(v1::Algorithm_IsValid(63));
  EXPECT_EQ(static_cast<int>(FromProto(unknown)), 63);
  EXPECT_EQ(client::WireName(FromProto(unknown)), "");
  EXPECT_EQ(ToProto(FromProto(unknown)), unknown);
}

// ElementSize has a width for every dtype the proto defines (its switch has no default), and none for
// DTYPE_UNSPECIFIED.
TEST(ProtoConvert, EveryDTypeButUnspecifiedHasAnElementSize) {
  for (int i = 0; i < v1::DType_descriptor()->value_count(); ++i) {
    const auto dtype = static_cast<v1::DType>(v1::DType_descriptor()->value(i)->number());
    const std::size_t size = client::ElementSize(FromProto(dtype));
    if (dtype == v1::DTYPE_UNSPECIFIED) {
      EXPECT_EQ(size, 0u);
    } else {
      EXPECT_TRUE(size == 1 || size == 2 || size == 4 || size == 8) << v1::DType_Name(dtype) << ": " << size;
    }
  }
  EXPECT_EQ(client::ElementSize(client::DType::kBFloat16), 2u);
  EXPECT_EQ(client::ElementSize(client::DType::kUint8), 1u);
  EXPECT_EQ(client::ElementSize(client::DType::kFloat64), 8u);
  EXPECT_EQ(client::ElementSize(client::DType::kInt32), 4u);
}

// Every field of `message` holds a value other than its default (repeated ones at least one element).
void ExpectEveryFieldSet(const Message& message) {
  const auto* descriptor = message.GetDescriptor();
  const auto* reflection = message.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    if (field->is_repeated()) {
      EXPECT_GT(reflection->FieldSize(message, field), 0) << descriptor->name() << "." << field->name();
    } else {
      EXPECT_TRUE(reflection->HasField(message, field))
          << descriptor->name() << "." << field->name() << " is not carried";
    }
  }
}

TEST(ProtoConvert, ExecutionInfoCarriesEveryField) {
  v1::ExecutionInfo proto;
  proto.set_algorithm(v1::ALGORITHM_RADIX_SELECT);
  proto.set_backend(v1::BACKEND_CUDA);
  proto.set_device("NVIDIA H100 80GB HBM3");
  v1::StageTime* stage = proto.add_stages();
  stage->set_stage("h2d");
  stage->set_seconds(0.25);
  stage = proto.add_stages();
  stage->set_stage("kernel");
  stage->set_seconds(0.5);
  proto.set_server_seconds(1.5);
  proto.set_request_id("trace-7");
  ExpectEveryFieldSet(proto);  // a field added to the proto must be set above (and carried)
  ExpectEveryFieldSet(proto.stages(0));

  const client::ExecutionInfo ours = FromProto(proto);
  EXPECT_EQ(ours.algorithm, client::Algorithm::kRadixSelect);
  EXPECT_EQ(ours.backend, client::Backend::kCuda);
  EXPECT_EQ(ours.device, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(ours.stages.size(), 2u);
  EXPECT_EQ(ours.stages[1], (client::StageTime{.stage = "kernel", .seconds = 0.5}));
  EXPECT_EQ(ours.server_seconds, 1.5);
  EXPECT_EQ(ours.request_id, "trace-7");
  const v1::ExecutionInfo back = ToProto(ours);
  ExpectEveryFieldSet(back);
  EXPECT_EQ(back.SerializeAsString(), proto.SerializeAsString());
}

TEST(ProtoConvert, RegionRefCarriesEveryField) {
  const client::RegionRef ours{.region_id = "0123456789abcdef0123456789abcdef", .offset = 64, .length = 4096};
  const v1::RegionRef proto = ToProto(ours);
  ExpectEveryFieldSet(proto);
  EXPECT_EQ(proto.region_id(), ours.region_id);
  EXPECT_EQ(proto.offset(), 64u);
  EXPECT_EQ(proto.length(), 4096u);
  EXPECT_EQ(FromProto(proto), ours);
}

// Every field of the proto's options has a counterpart in the client's: a field the proto gains fails
// here until SortOptions / TopKOptions carry it.
TEST(ProtoConvert, SortAndTopKOptionsFillEveryField) {
  const uint64_t offsets[] = {0, 2, 5};
  RawSortRequest sort{.dtype = client::DType::kFloat16,
                      .keys = {},
                      .options = {.descending = true,
                                  .stable = true,
                                  .algorithm = client::Algorithm::kMerge,
                                  .rows = 3,
                                  .segment_offsets = offsets},
                      .payload = client::Payload::kValues,
                      .values = {},
                      .value_width = 12};
  v1::SortOptions sort_proto;
  FillSortOptions(sort, &sort_proto);
  ExpectEveryFieldSet(sort_proto);
  EXPECT_EQ(sort_proto.dtype(), v1::DTYPE_FLOAT16);
  EXPECT_EQ(sort_proto.order(), v1::ORDER_DESCENDING);
  EXPECT_EQ(sort_proto.payload(), v1::PAYLOAD_VALUES);
  EXPECT_EQ(sort_proto.algorithm(), v1::ALGORITHM_MERGE);
  EXPECT_EQ(sort_proto.value_width(), 12u);
  EXPECT_EQ(sort_proto.rows(), 3u);
  EXPECT_EQ(sort_proto.segment_offsets(), std::string(reinterpret_cast<const char*>(offsets), sizeof offsets));

  const TopKOptions top{.k = 7,
                        .largest = true,
                        .sorted = true,
                        .output = client::TopKOutput::kIndices,
                        .rows = 2,
                        .algorithm = client::Algorithm::kSmallK,
                        .segment_offsets = offsets};
  v1::TopKOptions top_proto;
  FillTopKOptions(client::DType::kInt8, top, &top_proto);
  ExpectEveryFieldSet(top_proto);
  EXPECT_EQ(top_proto.dtype(), v1::DTYPE_INT8);
  EXPECT_EQ(top_proto.k(), 7u);
  EXPECT_EQ(top_proto.output(), v1::TOPK_OUTPUT_INDICES);
  EXPECT_EQ(top_proto.algorithm(), v1::ALGORITHM_SMALL_K);
  EXPECT_EQ(top_proto.rows(), 2u);
}

}  // namespace
}  // namespace gpusort::client_internal
