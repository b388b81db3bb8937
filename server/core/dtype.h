// Element types of key arrays, independent of the wire format and of CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace gpusort {

enum class DType { kInt32, kUInt32, kInt64, kUInt64, kFloat32, kFloat64 };

inline constexpr DType kAllDTypes[] = {DType::kInt32,   DType::kUInt32,  DType::kInt64,
                                       DType::kUInt64,  DType::kFloat32, DType::kFloat64};

constexpr std::size_t ElementSize(DType d) {
  switch (d) {
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

// Short names used in metrics labels, logs, the CLI and file formats: i32 u32 i64 u64 f32 f64.
std::string_view DTypeName(DType d);
std::optional<DType> ParseDType(std::string_view name);  // accepts i32/int32, f32/float32, ...

template <typename T> struct DTypeOf;
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kUInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kUInt64; };
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kFloat64; };

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
  }
  return f(double{});
}

}  // namespace gpusort
