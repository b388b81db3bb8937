#include "server/core/dtype.h"

namespace gpusort {

std::string_view DTypeName(DType d) {
  switch (d) {
    case DType::kInt32: return "i32";
    case DType::kUInt32: return "u32";
    case DType::kInt64: return "i64";
    case DType::kUInt64: return "u64";
    case DType::kFloat32: return "f32";
    case DType::kFloat64: return "f64";
    case DType::kFloat16: return "f16";
    case DType::kBFloat16: return "bf16";
    case DType::kInt16: return "i16";
    case DType::kUInt16: return "u16";
    case DType::kInt8: return "i8";
    case DType::kUInt8: return "u8";
  }
  return "unknown";
}

std::optional<DType> ParseDType(std::string_view name) {
  struct Alias { std::string_view name; DType dtype; };
  static constexpr Alias kAliases[] = {
      {"i32", DType::kInt32},   {"int32", DType::kInt32},     {"u32", DType::kUInt32},
      {"uint32", DType::kUInt32}, {"i64", DType::kInt64},     {"int64", DType::kInt64},
      {"u64", DType::kUInt64},  {"uint64", DType::kUInt64},   {"f32", DType::kFloat32},
      {"float32", DType::kFloat32}, {"float", DType::kFloat32}, {"f64", DType::kFloat64},
      {"float64", DType::kFloat64}, {"double", DType::kFloat64},  {"f16", DType::kFloat16},
      {"float16", DType::kFloat16}, {"half", DType::kFloat16},    {"bf16", DType::kBFloat16},
      {"bfloat16", DType::kBFloat16}, {"i16", DType::kInt16},     {"int16", DType::kInt16},
      {"u16", DType::kUInt16},      {"uint16", DType::kUInt16},   {"i8", DType::kInt8},
      {"int8", DType::kInt8},       {"u8", DType::kUInt8},        {"uint8", DType::kUInt8}};
  for (const Alias& a : kAliases)
    if (a.name == name) return a.dtype;
  return std::nullopt;
}

}  // namespace gpusort
