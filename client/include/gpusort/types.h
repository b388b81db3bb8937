// gpusort's own vocabulary for the C++ client: key dtypes, algorithms, payloads, top-k outputs,
// backends, how the server served a call (ExecutionInfo) and ranges of registered regions (RegionRef).
// Plain C++: no gRPC, no protobuf.
//
// They live in gpusort::client (gpusort::client::DType::kFloat32), not in gpusort itself, because the
// server's own code already has a gpusort::DType, gpusort::Algorithm and gpusort::StageTime of other
// shapes (server/core), and programs such as the tests see both.
//
// Every enum here numbers its values as proto/gpusort/v1/sort.proto numbers the same values, on purpose:
// the client library converts to and from the wire with a static_cast that it checks against the
// proto at compile time (client/src/proto_convert.cc), and a test (tests/client/proto_convert_test.cc)
// fails when the proto gains a value these enums lack. A value a newer server answers that this header
// does not name keeps its number (its WireName is then "").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpusort::client {

// Element type of a key array (little-endian).
enum class DType : int {
  kUnspecified = 0,  // refused by the server
  kInt32 = 1,
  kUint32 = 2,
  kInt64 = 3,
  kUint64 = 4,
  kFloat32 = 5,   // IEEE 754 binary32, sorted by totalOrder (sort.proto)
  kFloat64 = 6,   // IEEE 754 binary64, sorted by totalOrder
  kFloat16 = 7,   // IEEE 754 binary16 (numpy float16, torch.half), its bits
  kBFloat16 = 8,  // bfloat16 (the upper half of a binary32), its bits
  kInt16 = 9,
  kUint16 = 10,
  kInt8 = 11,
  kUint8 = 12,
};

// Which implementation runs. kAuto lets the server choose; naming one the serving backend lacks is
// answered UNIMPLEMENTED. 32 and up are top-k kernels (TopK only).
enum class Algorithm : int {
  kAuto = 0,
  kRadix = 1,      // GPU radix sort (CUB)
  kMerge = 2,      // GPU merge sort with Merge Path partitioning
  kBitonic = 3,    // GPU bitonic sorting network
  kOddEven = 4,    // GPU odd-even transposition sort (small arrays)
  kQuicksort = 5,  // GPU quicksort with dynamic parallelism
  kCpu = 6,        // the server's multi-core CPU implementation
  kRadixSelect = 32,  // GPU radix select; any k
  kSmallK = 33,       // GPU selection in registers and shared memory; k <= 1024
  kThreadLists = 34,  // GPU per-thread sorted lists merged per block; k <= 128
};

// What travels with the keys of a Sort.
enum class Payload : int {
  kNone = 0,     // keys only
  kValues = 1,   // one value of value_width opaque bytes per key, moved with it
  kIndices = 2,  // the permutation (argsort): indices[i] is the input position of output key i
};

// What a TopK answers.
enum class TopKOutput : int {
  kValuesAndIndices = 0,
  kValues = 1,   // only the selected keys
  kIndices = 2,  // only their positions
};

// Where the server ran a call.
enum class Backend : int {
  kUnspecified = 0,
  kCpu = 1,
  kCuda = 2,
};

// Time one stage of a request took on the server ("queue", "h2d", "kernel", "sort", ...; sort.proto
// lists them).
struct StageTime {
  std::string stage{};
  double seconds = 0;
  friend bool operator==(const StageTime&, const StageTime&) = default;
};

// How the server served a call (sort.proto's ExecutionInfo).
struct ExecutionInfo {
  Algorithm algorithm = Algorithm::kAuto;  // what actually ran (never kAuto in an answer)
  Backend backend = Backend::kUnspecified;
  std::string device{};              // e.g. "cpu (2 threads)" or "NVIDIA H100 80GB HBM3"
  std::vector<StageTime> stages{};   // in the order they happened
  double server_seconds = 0;         // from arrival to the reply, server side
  std::string request_id{};          // the caller's request id, or one the server made
  friend bool operator==(const ExecutionInfo&, const ExecutionInfo&) = default;
};

// [offset, offset + length) bytes of a region registered on the server's shared-memory socket
// (SharedMemoryRegion::Ref, SharedMemoryRegistration::Ref).
struct RegionRef {
  std::string region_id{};  // the id the registration answered
  uint64_t offset = 0;      // bytes from the region's start
  uint64_t length = 0;      // bytes
  friend bool operator==(const RegionRef&, const RegionRef&) = default;
};

// Bytes per element of `dtype`: 1, 2, 4 or 8; 0 for kUnspecified and numbers that name no dtype.
constexpr std::size_t ElementSize(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
    case DType::kUint8: return 1;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
    case DType::kUint16: return 2;
    case DType::kInt32:
    case DType::kUint32:
    case DType::kFloat32: return 4;
    case DType::kInt64:
    case DType::kUint64:
    case DType::kFloat64: return 8;
    case DType::kUnspecified: return 0;
  }
  return 0;
}

// The names sort.proto gives the values ("DTYPE_FLOAT32", "ALGORITHM_RADIX_SELECT", "BACKEND_CUDA"), for
// logs and messages; "" for a number that names no value. No default branches: the compiler's -Wswitch
// points at a value added above and left out here.
constexpr std::string_view WireName(DType dtype) {
  switch (dtype) {
    case DType::kUnspecified: return "DTYPE_UNSPECIFIED";
    case DType::kInt32: return "DTYPE_INT32";
    case DType::kUint32: return "DTYPE_UINT32";
    case DType::kInt64: return "DTYPE_INT64";
    case DType::kUint64: return "DTYPE_UINT64";
    case DType::kFloat32: return "DTYPE_FLOAT32";
    case DType::kFloat64: return "DTYPE_FLOAT64";
    case DType::kFloat16: return "DTYPE_FLOAT16";
    case DType::kBFloat16: return "DTYPE_BFLOAT16";
    case DType::kInt16: return "DTYPE_INT16";
    case DType::kUint16: return "DTYPE_UINT16";
    case DType::kInt8: return "DTYPE_INT8";
    case DType::kUint8: return "DTYPE_UINT8";
  }
  return "";
}

constexpr std::string_view WireName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kAuto: return "ALGORITHM_AUTO";
    case Algorithm::kRadix: return "ALGORITHM_RADIX";
    case Algorithm::kMerge: return "ALGORITHM_MERGE";
    case Algorithm::kBitonic: return "ALGORITHM_BITONIC";
    case Algorithm::kOddEven: return "ALGORITHM_ODD_EVEN";
    case Algorithm::kQuicksort: return "ALGORITHM_QUICKSORT";
    case Algorithm::kCpu: return "ALGORITHM_CPU";
    case Algorithm::kRadixSelect: return "ALGORITHM_RADIX_SELECT";
    case Algorithm::kSmallK: return "ALGORITHM_SMALL_K";
    case Algorithm::kThreadLists: return "ALGORITHM_THREAD_LISTS";
  }
  return "";
}

constexpr std::string_view WireName(Payload payload) {
  switch (payload) {
    case Payload::kNone: return "PAYLOAD_NONE";
    case Payload::kValues: return "PAYLOAD_VALUES";
    case Payload::kIndices: return "PAYLOAD_INDICES";
  }
  return "";
}

constexpr std::string_view WireName(TopKOutput output) {
  switch (output) {
    case TopKOutput::kValuesAndIndices: return "TOPK_OUTPUT_VALUES_AND_INDICES";
    case TopKOutput::kValues: return "TOPK_OUTPUT_VALUES";
    case TopKOutput::kIndices: return "TOPK_OUTPUT_INDICES";
  }
  return "";
}

constexpr std::string_view WireName(Backend backend) {
  switch (backend) {
    case Backend::kUnspecified: return "BACKEND_UNSPECIFIED";
    case Backend::kCpu: return "BACKEND_CPU";
    case Backend::kCuda: return "BACKEND_CUDA";
  }
  return "";
}

}  // namespace gpusort::client
