// Between the client's own types (gpusort/types.h, gpusort/client.h) and the generated proto types:
// the one place the client library crosses from one to the other. Private to the library (tests
// include it from the top, as they do channel_config.h).
//
// The enums of gpusort/types.h carry sort.proto's numbers, so each conversion is a static_cast; the
// static_asserts in proto_convert.cc hold every value to its proto number, and
// tests/client/proto_convert_test.cc fails when the proto gains a value the enums lack.
#pragma once

#include "gpusort/client.h"
#include "gpusort/types.h"
#include "gpusort/v1/sort.pb.h"

namespace gpusort::client_internal {

inline v1::DType ToProto(client::DType d) { return static_cast<v1::DType>(d); }
inline v1::Algorithm ToProto(client::Algorithm a) { return static_cast<v1::Algorithm>(a); }
inline v1::Payload ToProto(client::Payload p) { return static_cast<v1::Payload>(p); }
inline v1::TopKOutput ToProto(client::TopKOutput o) { return static_cast<v1::TopKOutput>(o); }
inline v1::Backend ToProto(client::Backend b) { return static_cast<v1::Backend>(b); }

// A number the proto does not name (a newer server's) stays that number.
inline client::DType FromProto(v1::DType d) { return static_cast<client::DType>(d); }
inline client::Algorithm FromProto(v1::Algorithm a) { return static_cast<client::Algorithm>(a); }
inline client::Payload FromProto(v1::Payload p) { return static_cast<client::Payload>(p); }
inline client::TopKOutput FromProto(v1::TopKOutput o) { return static_cast<client::TopKOutput>(o); }
inline client::Backend FromProto(v1::Backend b) { return static_cast<client::Backend>(b); }

v1::RegionRef ToProto(const client::RegionRef& ref);
client::RegionRef FromProto(const v1::RegionRef& ref);
v1::ExecutionInfo ToProto(const client::ExecutionInfo& info);
client::ExecutionInfo FromProto(const v1::ExecutionInfo& info);

// The wire options of a Sort (dtype, order, payload, algorithm, rows, segments) and of a TopK.
void FillSortOptions(const RawSortRequest& request, v1::SortOptions* out);
void FillTopKOptions(client::DType dtype, const TopKOptions& options, v1::TopKOptions* out);

}  // namespace gpusort::client_internal
