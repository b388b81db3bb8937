#include "client/cli/dtype_names.h"

namespace gpusort::cli {
namespace {
struct Name { std::string_view name; v1::DType dtype; };
constexpr Name kNames[] = {
    {"i32", v1::DTYPE_INT32},   {"int32", v1::DTYPE_INT32},     {"u32", v1::DTYPE_UINT32},
    {"uint32", v1::DTYPE_UINT32}, {"i64", v1::DTYPE_INT64},     {"int64", v1::DTYPE_INT64},
    {"u64", v1::DTYPE_UINT64},  {"uint64", v1::DTYPE_UINT64},   {"f32", v1::DTYPE_FLOAT32},
    {"float32", v1::DTYPE_FLOAT32}, {"float", v1::DTYPE_FLOAT32}, {"f64", v1::DTYPE_FLOAT64},
    {"float64", v1::DTYPE_FLOAT64}, {"double", v1::DTYPE_FLOAT64}};
}  // namespace

std::optional<v1::DType> ParseDType(std::string_view name) {
  for (const Name& n : kNames)
    if (n.name == name) return n.dtype;
  return std::nullopt;
}

std::string DTypeName(v1::DType d) {
  for (const Name& n : kNames)
    if (n.dtype == d) return std::string(n.name);
  return "unknown";
}

std::size_t ElementSize(v1::DType d) {
  switch (d) {
    case v1::DTYPE_INT64:
    case v1::DTYPE_UINT64:
    case v1::DTYPE_FLOAT64: return 8;
    default: return 4;
  }
}

}  // namespace gpusort::cli
