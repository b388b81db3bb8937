// Names of the wire dtypes on the command line and in files: i32 u32 i64 u64 f32 f64 (and long forms).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "gpusort/v1/sort.pb.h"

namespace gpusort::cli {

std::optional<v1::DType> ParseDType(std::string_view name);
std::string DTypeName(v1::DType d);
std::size_t ElementSize(v1::DType d);

// Calls f(T{}) with the C++ type of d (d must be a known dtype).
template <typename F>
decltype(auto) VisitDType(v1::DType d, F&& f) {
  switch (d) {
    case v1::DTYPE_INT32: return f(int32_t{});
    case v1::DTYPE_UINT32: return f(uint32_t{});
    case v1::DTYPE_INT64: return f(int64_t{});
    case v1::DTYPE_UINT64: return f(uint64_t{});
    case v1::DTYPE_FLOAT32: return f(float{});
    default: return f(double{});
  }
}

}  // namespace gpusort::cli
