// Names of the wire dtypes on the command line and in files: i32 u32 i64 u64 f32 f64 f16 bf16 i16 u16
// i8 u8 (and long forms), and the C++ type the CLI holds each one's keys in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/status/statusor.h"
#include "client/cli/client_types.h"
#include "client/cli/narrow_float.h"

namespace gpusort::cli {

std::optional<DType> ParseDType(std::string_view name);
// ParseDType for a --dtype flag: an unknown name is an error that lists the valid ones.
absl::StatusOr<DType> ParseDTypeFlag(std::string_view name);
// Every accepted name, grouped by dtype: "i32/int32, u32/uint32, ...".
std::string DTypeNameList();
std::string DTypeName(DType d);

// Calls f(T{}) with the C++ type of d (d must be a known dtype). Each dtype has a type of its own:
// float16 and bfloat16 keys are Float16 and BFloat16 (client/cli/narrow_float.h), their bits.
template <typename F>
decltype(auto) VisitDType(DType d, F&& f) {
  switch (d) {
    case DType::kInt32: return f(int32_t{});
    case DType::kUint32: return f(uint32_t{});
    case DType::kInt64: return f(int64_t{});
    case DType::kUint64: return f(uint64_t{});
    case DType::kFloat32: return f(float{});
    case DType::kFloat16: return f(Float16{});
    case DType::kBFloat16: return f(BFloat16{});
    case DType::kInt16: return f(int16_t{});
    case DType::kUint16: return f(uint16_t{});
    case DType::kInt8: return f(int8_t{});
    case DType::kUint8: return f(uint8_t{});
    default: return f(double{});
  }
}

// The unsigned integer as wide as the key type T (its bits, for std::bit_cast).
template <typename T>
using KeyBitsType = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

}  // namespace gpusort::cli
