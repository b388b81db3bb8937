#include "client/cli/dtype_names.h"

namespace gpusort::cli {
namespace {
// Each dtype's short name first (DTypeName), then its long forms.
struct Name { std::string_view name; DType dtype; };
constexpr Name kNames[] = {
    {"i32", DType::kInt32},       {"int32", DType::kInt32},     {"u32", DType::kUint32},
    {"uint32", DType::kUint32},   {"i64", DType::kInt64},       {"int64", DType::kInt64},
    {"u64", DType::kUint64},      {"uint64", DType::kUint64},   {"f32", DType::kFloat32},
    {"float32", DType::kFloat32}, {"float", DType::kFloat32},   {"f64", DType::kFloat64},
    {"float64", DType::kFloat64}, {"double", DType::kFloat64},  {"f16", DType::kFloat16},
    {"float16", DType::kFloat16}, {"half", DType::kFloat16},    {"bf16", DType::kBFloat16},
    {"bfloat16", DType::kBFloat16}, {"i16", DType::kInt16},     {"int16", DType::kInt16},
    {"u16", DType::kUint16},      {"uint16", DType::kUint16},   {"i8", DType::kInt8},
    {"int8", DType::kInt8},       {"u8", DType::kUint8},        {"uint8", DType::kUint8}};
}  // namespace

std::optional<DType> ParseDType(std::string_view name) {
  for (const Name& n : kNames)
    if (n.name == name) return n.dtype;
  return std::nullopt;
}

absl::StatusOr<DType> ParseDTypeFlag(std::string_view name) {
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

std::string DTypeName(DType d) {
  for (const Name& n : kNames)
    if (n.dtype == d) return std::string(n.name);
  return "unknown";
}

}  // namespace gpusort::cli
