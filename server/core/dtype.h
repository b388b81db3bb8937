// Element types of key arrays, independent of the wire format and of CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "server/core/narrow_float.h"

namespace gpusort {

enum class DType {
  kInt32, kUInt32, kInt64, kUInt64, kFloat32, kFloat64,
  kFloat16, kBFloat16, kInt16, kUInt16, kInt8, kUInt8,
};

inline constexpr DType kAllDTypes[] = {
    DType::kInt32,   DType::kUInt32,   DType::kInt64, DType::kUInt64, DType::kFloat32, DType::kFloat64,
    DType::kFloat16, DType::kBFloat16, DType::kInt16, DType::kUInt16, DType::kInt8,    DType::kUInt8};

constexpr std::size_t ElementSize(DType d) {
  switch (d) {
    case DType::kInt8:
    case DType::kUInt8:
      return 1;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
    case DType::kUInt16:
      return 2;
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kUInt64:
    case DType::kFloat64:
      return 8;
  }
  return 0;
}

// Short names used in metrics labels, logs, the CLI and file formats: i32 u32 i64 u64 f32 f64 f16
// bf16 i16 u16 i8 u8.
std::string_view DTypeName(DType d);
std::optional<DType> ParseDType(std::string_view name);  // accepts i32/int32, f32/float32, ...

template <typename T> struct DTypeOf;
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kUInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kUInt64; };
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kFloat64; };
template <> struct DTypeOf<Float16> { static constexpr DType value = DType::kFloat16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::kBFloat16; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kInt16; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kUInt16; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kUInt8; };

// Calls f(T{}) with T the C++ type of `d`: turns a runtime dtype into a template argument once.
template <typename F>
decltype(auto) VisitDType(DType d, F&& f) {
  switch (d) {
    case DType::kInt32: return f(int32_t{});
    case DType::kUInt32: return f(uint32_t{});
    case DType::kInt64: return f(int64_t{});
    case DType::kUInt64: return f(uint64_t{});
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: break;
    case DType::kFloat16: return f(Float16{});
    case DType::kBFloat16: return f(BFloat16{});
    case DType::kInt16: return f(int16_t{});
    case DType::kUInt16: return f(uint16_t{});
    case DType::kInt8: return f(int8_t{});
    case DType::kUInt8: return f(uint8_t{});
  }
  return f(double{});
}

}  // namespace gpusort
