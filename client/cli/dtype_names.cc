#include "client/cli/dtype_names.h"

namespace gpusort::cli {
namespace {
// Each dtype's short name first (DTypeName), then its long forms.
struct Name { std::string_view name; v1::DType dtype; };
constexpr Name kNames[] = {
    {"i32", v1::DTYPE_INT32},       {"int32", v1::DTYPE_INT32},     {"u32", v1::DTYPE_UINT32},
    {"uint32", v1::DTYPE_UINT32},   {"i64", v1::DTYPE_INT64},       {"int64", v1::DTYPE_INT64},
    {"u64", v1::DTYPE_UINT64},      {"uint64", v1::DTYPE_UINT64},   {"f32", v1::DTYPE_FLOAT32},
    {"float32", v1::DTYPE_FLOAT32}, {"float", v1::DTYPE_FLOAT32},   {"f64", v1::DTYPE_FLOAT64},
    {"float64", v1::DTYPE_FLOAT64}, {"double", v1::DTYPE_FLOAT64},  {"f16", v1::DTYPE_FLOAT16},
    {"float16", v1::DTYPE_FLOAT16}, {"half", v1::DTYPE_FLOAT16},    {"bf16", v1::DTYPE_BFLOAT16},
    {"bfloat16", v1::DTYPE_BFLOAT16}, {"i16", v1::DTYPE_INT16},     {"int16", v1::DTYPE_INT16},
    {"u16", v1::DTYPE_UINT16},      {"uint16", v1::DTYPE_UINT16},   {"i8", v1::DTYPE_INT8},
    {"int8", v1::DTYPE_INT8},       {"u8", v1::DTYPE_UINT8},        {"uint8", v1::DTYPE_UINT8}};
}  // namespace

std::optional<v1::DType> ParseDType(std::string_view name) {
  for (const Name& n : kNames)
    if (n.name == name) return n.dtype;
  return std::nullopt;
}

absl::StatusOr<v1::DType> ParseDTypeFlag(std::string_view name) {
  if (auto d = ParseDType(name)) return *d;
  return absl::InvalidArgumentError("unknown --dtype '" + std::string(name) + "' (valid: " + DTypeNameList() + ")");
}

std::string DTypeNameList() {
  std::string list;
  for (std::size_t i = 0; i < std::size(kNames); ++i) {
    const bool same_dtype = i > 0 && kNames[i - 1].dtype == kNames[i].dtype;
    list += same_dtype ? "/" : (i > 0 ? ", " : "");
    list += kNames[i].name;
  }
  return list;
}

std::string DTypeName(v1::DType d) {
  for (const Name& n : kNames)
    if (n.dtype == d) return std::string(n.name);
  return "unknown";
}

std::size_t ElementSize(v1::DType d) {
  switch (d) {
    case v1::DTYPE_INT8:
    case v1::DTYPE_UINT8: return 1;
    case v1::DTYPE_FLOAT16:
    case v1::DTYPE_BFLOAT16:
    case v1::DTYPE_INT16:
    case v1::DTYPE_UINT16: return 2;
    case v1::DTYPE_INT64:
    case v1::DTYPE_UINT64:
    case v1::DTYPE_FLOAT64: return 8;
    default: return 4;
  }
}

}  // namespace gpusort::cli
