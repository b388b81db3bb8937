// The client library's vocabulary (gpusort/types.h) by its short names inside the CLI: in gpusort::cli,
// DType is gpusort::client::DType. Not gpusort::DType, which is the server's own (server/core), seen
// too by the tests and fuzzers that link the CLI's files.
#pragma once

#include "gpusort/types.h"

namespace gpusort::cli {

using client::Algorithm;
using client::DType;
using client::ElementSize;
using client::ExecutionInfo;
using client::Payload;
using client::RegionRef;
using client::TopKOutput;
using client::WireName;

}  // namespace gpusort::cli
