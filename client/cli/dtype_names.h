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
#include "client/cli/narrow_float.h"
#include "gpusort/v1/sort.pb.h"

namespace gpusort::cli {

std::optional<v1::DType> ParseDType(std::string_view name);
// ParseDType for a --dtype flag: an unknown name is an error that lists the valid ones.
absl::StatusOr<v1::DType> ParseDTypeFlag(std::string_view name);
// Every accepted name, grouped by dtype: "i32/int32, u32/uint32, ...".
std::string DTypeNameList();
std::string DTypeName(v1::DType d);
std::size_t ElementSize(v1::DType d);

// Calls f(T{}) with the C++ type of d (d must be a known dtype). Each dtype has a type of its own:
// float16 and bfloat16 keys are Float16 and BFloat16 (client/cli/narrow_float.h), their bits.
template <typename F>
decltype(auto) VisitDType(v1::DType d, F&& f) {
  switch (d) {
    case v1::DTYPE_INT32: return f(int32_t{});
    case v1::DTYPE_UINT32: return f(uint32_t{});
    case v1::DTYPE_INT64: return f(int64_t{});
    case v1::DTYPE_UINT64: return f(uint64_t{});
    case v1::DTYPE_FLOAT32: return f(float{});
    case v1::DTYPE_FLOAT16: return f(Float16{});
    case v1::DTYPE_BFLOAT16: return f(BFloat16{});
    case v1::DTYPE_INT16: return f(int16_t{});
    case v1::DTYPE_UINT16: return f(uint16_t{});
    case v1::DTYPE_INT8: return f(int8_t{});
    case v1::DTYPE_UINT8: return f(uint8_t{});
    default: return f(double{});
  }
}

// The unsigned integer as wide as the key type T (its bits, for std::bit_cast).
template <typename T>
using KeyBitsType = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

}  // namespace gpusort::cli
