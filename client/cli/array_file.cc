#include "client/cli/array_file.h"

#include <sys/stat.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "client/cli/dtype_names.h"
#include "client/cli/narrow_float_text.h"

namespace gpusort::cli {
namespace {

using File = std::unique_ptr<FILE, int (*)(FILE*)>;

int KeepOpen(FILE*) { return 0; }

// "-": standard input (mode "rb") or output (anything else), left open at the end.
absl::StatusOr<File> Open(const std::string& path, const char* mode) {
  if (path == kStdio) return File(mode[0] == 'r' ? stdin : stdout, &KeepOpen);
  FILE* f = std::fopen(path.c_str(), mode);
  if (f == nullptr)
    return absl::NotFoundError("cannot open " + path + ": " + std::strerror(errno));
  return File(f, &std::fclose);
}

absl::StatusOr<std::size_t> FileSize(FILE* f, const std::string& path) {
  if (std::fseek(f, 0, SEEK_END) != 0) return absl::InternalError("cannot seek in " + path);
  const long size = std::ftell(f);
  std::rewind(f);
  if (size < 0) return absl::InternalError("cannot size " + path);
  return static_cast<std::size_t>(size);
}

absl::Status ReadExactly(FILE* f, std::size_t bytes, std::string* out, const std::string& path) {
  out->resize(bytes);
  if (bytes > 0 && std::fread(out->data(), 1, bytes, f) != bytes)
    return absl::DataLossError("short read from " + path);
  return absl::OkStatus();
}

absl::Status WriteAll(FILE* f, std::string_view bytes, const std::string& path) {
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size())
    return absl::DataLossError("cannot write " + path + ": " + std::strerror(errno));
  return absl::OkStatus();
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Little-endian only (the wire's byte order). Each dtype's first entry is what NumPy writes for it; a
// 1-byte type has no byte order, so '<' and '>' mean the same as NumPy's '|'. bfloat16 has no NumPy
// dtype, hence no entry: CheckWritable says so.
struct NpyType { std::string_view descr; DType dtype; };
constexpr NpyType kNpyTypes[] = {
    {"<i4", DType::kInt32},   {"<u4", DType::kUint32},  {"<i8", DType::kInt64},
    {"<u8", DType::kUint64},  {"<f4", DType::kFloat32}, {"<f8", DType::kFloat64},
    {"<f2", DType::kFloat16}, {"<i2", DType::kInt16},   {"<u2", DType::kUint16},
    {"|i1", DType::kInt8},    {"<i1", DType::kInt8},    {">i1", DType::kInt8},
    {"|u1", DType::kUint8},   {"<u1", DType::kUint8},   {">u1", DType::kUint8}};

std::string_view NpyDescr(DType dtype) {
  for (const auto& t : kNpyTypes)
    if (t.dtype == dtype) return t.descr;
  return {};
}

// A 16-bit float: read as a double for the syntax (nan, inf, exponents), then rounded once from the
// decimal itself (narrow_float_text.h). Out of range as from_chars reports it for float: a nonzero
// number that rounds to zero, or past the largest finite value.
template <typename T>
std::from_chars_result NarrowFromChars(std::string_view digits, bool negative, T* value) {
  double wide = 0;
  std::from_chars_result r = std::from_chars(digits.data(), digits.data() + digits.size(), wide);
  if (r.ec != std::errc()) return r;
  if (!std::isfinite(wide)) {
    *value = ToNarrow<T>(negative ? -wide : wide);
    return r;
  }
  const std::uint16_t magnitude = RoundDecimal({digits.data(), r.ptr}, wide, FormatOf<T>());
  const std::uint16_t infinity = ToNarrow<T>(std::numeric_limits<double>::infinity()).bits;
  if ((magnitude == 0 && wide != 0) || magnitude == infinity) r.ec = std::errc::result_out_of_range;
  *value = T{static_cast<std::uint16_t>(magnitude | (negative ? 0x8000u : 0u))};
  return r;
}

// One number's text as T, by std::from_chars. from_chars reads "nan" and "inf" but no sign before
// them, so a float's '-' is taken off first and put back after: "-nan" and "-inf" keep their sign.
template <typename T>
std::from_chars_result FromChars(std::string_view t, T* value) {
  if constexpr (std::is_integral_v<T>) {
    return std::from_chars(t.data(), t.data() + t.size(), *value);
  } else {
    const bool negative = !t.empty() && t.front() == '-';
    const std::string_view digits = t.substr(negative ? 1 : 0);
    if constexpr (kIsNarrowFloat<T>) {
      return NarrowFromChars(digits, negative, value);
    } else {
      const std::from_chars_result r = std::from_chars(digits.data(), digits.data() + digits.size(), *value);
      if (negative) *value = -*value;
      return r;
    }
  }
}

// The text after 'key': in a header dict, up to the next comma at depth 0 or the closing brace.
std::optional<std::string_view> DictValue(std::string_view header, std::string_view key) {
  const std::string quoted = "'" + std::string(key) + "'";
  auto at = header.find(quoted);
  if (at == std::string_view::npos) return std::nullopt;
  at = header.find(':', at + quoted.size());
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t end = at + 1;
  int depth = 0;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if ((c == ',' && depth == 0) || (c == '}' && depth == 0)) break;
  }
  return Trim(header.substr(at + 1, end - at - 1));
}

}  // namespace

std::size_t Array::count() const {
  const std::size_t width = ElementSize(dtype);
  return width == 0 ? 0 : bytes.size() / width;  // an Array whose dtype is not set yet holds none
}

absl::StatusOr<FileFormat> ChooseFormat(const std::string& flag, const std::string& path) {
  if (flag == "raw") return FileFormat::kRaw;
  if (flag == "text" || flag == "txt") return FileFormat::kText;
  if (flag == "npy") return FileFormat::kNpy;
  if (!flag.empty() && flag != "auto")
    return absl::InvalidArgumentError("unknown format '" + flag + "' (raw, text or npy)");
  auto ends_with = [&](std::string_view ext) {
    return path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (ends_with(".npy")) return FileFormat::kNpy;
  if (ends_with(".txt") || ends_with(".csv") || ends_with(".text")) return FileFormat::kText;
  return FileFormat::kRaw;
}

absl::StatusOr<FileFormat> ChooseReadFormat(const std::string& flag, const std::string& path) {
  if (!flag.empty() && flag != "auto") return ChooseFormat(flag, path);
  if (path == kStdio) {  // cannot be read twice: .npy when its first bytes say so (ReadArray), else text
    const int c = std::fgetc(stdin);
    if (c == EOF) return FileFormat::kText;
    std::ungetc(c, stdin);
    return c == 0x93 ? FileFormat::kNpy : FileFormat::kText;
  }
  if (FILE* f = std::fopen(path.c_str(), "rb"); f != nullptr) {
    char magic[6] = {};
    const bool npy = std::fread(magic, 1, sizeof magic, f) == sizeof magic &&
                     std::memcmp(magic, "\x93NUMPY", sizeof magic) == 0;
    std::fclose(f);
    if (npy) return FileFormat::kNpy;
  }
  return ChooseFormat(flag, path);
}

absl::StatusOr<FileFormat> ChooseWriteFormat(const std::string& flag, const std::string& path) {
  if (!flag.empty() && flag != "auto") return ChooseFormat(flag, path);
  if (path == kStdio) return FileFormat::kText;  // a terminal or a pipe: text unless --format says
  const std::size_t slash = path.find_last_of('/');
  const std::size_t dot = path.find_last_of('.');
  const bool has_extension = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  const std::string extension = has_extension ? path.substr(dot) : "";
  for (const char* known : {".npy", ".txt", ".csv", ".text", ".bin", ".raw", ""}) {
    if (extension == known) return ChooseFormat(flag, path);
  }
  return absl::InvalidArgumentError("cannot tell how to write " + path + ": the CLI writes .npy, text (.txt, "
                                    ".csv) and raw (.bin, .raw, or no extension), not " + extension +
                                    "; pass --format raw|text|npy to choose");
}

absl::Status AppendParsedNumber(DType dtype, std::string_view text, std::string* bytes) {
  return VisitDType(dtype, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    T value{};
    std::string_view t = text;
    if (!t.empty() && t.front() == '+') t.remove_prefix(1);
    // One sign at most: from_chars reads a '-' of its own after the '+' taken off here, and a float's '-'
    // is taken off in FromChars before from_chars would read a second one ("+-5" and "--5" are no numbers).
    const bool minus = !t.empty() && t.front() == '-' && t.size() == text.size();
    const std::string_view digits = minus ? t.substr(1) : t;
    if (!digits.empty() && (digits.front() == '-' || digits.front() == '+'))
      return absl::InvalidArgumentError("'" + std::string(text) + "' is not a " + DTypeName(dtype) + " number");
    const std::from_chars_result r = FromChars(t, &value);
    if (r.ec == std::errc::result_out_of_range)
      return absl::InvalidArgumentError("'" + std::string(text) + "' is out of range for " +
                                        DTypeName(dtype));
    if (r.ec != std::errc() || r.ptr != t.data() + t.size())
      return absl::InvalidArgumentError("'" + std::string(text) + "' is not a " + DTypeName(dtype) +
                                        " number");
    bytes->append(reinterpret_cast<const char*>(&value), sizeof value);
    return absl::OkStatus();
  });
}

std::string FormatNumber(DType dtype, const char* element) {
  return VisitDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    T value;
    std::memcpy(&value, element, sizeof value);
    if constexpr (kIsNarrowFloat<T>) {
      return NarrowToText(value);
    } else {
      char buffer[64];
      auto r = std::to_chars(buffer, buffer + sizeof buffer, value);
      return std::string(buffer, r.ptr);
    }
  });
}

std::string NpyHeader(DType dtype, const std::vector<std::size_t>& shape) {
  const std::string descr(NpyDescr(dtype));
  std::string dims;
  for (std::size_t d : shape) dims += std::to_string(d) + ",";
  if (shape.size() > 1) dims.pop_back();  // (n,) for one dimension, (r, c) for two
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Version 1.0: magic (6) + version (2) + length (2) + dict, padded with spaces and a newline to 64.
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string header("\x93NUMPY\x01\x00", 8);
  header += static_cast<char>(dict.size() & 0xff);
  header += static_cast<char>((dict.size() >> 8) & 0xff);
  return header + dict;
}

absl::Status ParseNpyHeader(std::string_view data, DType* dtype,
                            std::vector<std::size_t>* shape, std::size_t* data_offset) {
  if (data.size() < 10 || data.substr(0, 6) != std::string_view("\x93NUMPY", 6))
    return absl::InvalidArgumentError("not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(data[6]);
  std::size_t length, start;
  if (major == 1) {
    length = static_cast<unsigned char>(data[8]) | (static_cast<unsigned char>(data[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) return absl::InvalidArgumentError("truncated .npy header");
    length = 0;
    for (int i = 3; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(data[8 + i]);
    start = 12;
  } else {
    return absl::InvalidArgumentError("unsupported .npy version " + std::to_string(major));
  }
  if (data.size() < start + length) return absl::InvalidArgumentError("truncated .npy header");
  const std::string_view header = data.substr(start, length);

  auto descr = DictValue(header, "descr");
  if (!descr || descr->size() < 2) return absl::InvalidArgumentError(".npy header has no descr");
  const std::string_view d = descr->substr(1, descr->size() - 2);  // strip the quotes
  *dtype = DType::kUnspecified;
  for (const auto& t : kNpyTypes)
    if (t.descr == d) *dtype = t.dtype;
  if (*dtype == DType::kUnspecified)
    return absl::InvalidArgumentError("unsupported .npy dtype '" + std::string(d) +
                                      "' (little-endian i1, u1, i2, u2, i4, u4, i8, u8, f2, f4, f8 only)");
  auto fortran = DictValue(header, "fortran_order");
  if (fortran && *fortran == "True")
    return absl::InvalidArgumentError("Fortran-order .npy arrays are not supported; save C order");
  auto shape_text = DictValue(header, "shape");
  if (!shape_text || shape_text->empty() || shape_text->front() != '(' || shape_text->back() != ')')
    return absl::InvalidArgumentError(".npy header has no shape");
  shape->clear();
  std::string_view dims = shape_text->substr(1, shape_text->size() - 2);
  while (!dims.empty()) {
    const auto comma = dims.find(',');
    const std::string_view item = Trim(dims.substr(0, comma));
    if (!item.empty()) {
      std::size_t value = 0;
      auto r = std::from_chars(item.data(), item.data() + item.size(), value);
      if (r.ec != std::errc() || r.ptr != item.data() + item.size())
        return absl::InvalidArgumentError("bad .npy shape '" + std::string(*shape_text) + "'");
      shape->push_back(value);
    }
    if (comma == std::string_view::npos) break;
    dims.remove_prefix(comma + 1);
  }
  if (shape->size() > 2)
    return absl::InvalidArgumentError(".npy arrays of " + std::to_string(shape->size()) +
                                      " dimensions are not supported (1-D, or 2-D for rows)");
  *data_offset = start + length;
  return absl::OkStatus();
}

absl::StatusOr<NpyLayout> CheckNpyFile(std::string_view head, std::size_t file_size,
                                       std::optional<DType> dtype, const std::string& name) {
  NpyLayout layout;
  absl::Status parsed = ParseNpyHeader(head, &layout.dtype, &layout.shape, &layout.data_offset);
  if (!parsed.ok()) return absl::InvalidArgumentError(name + ": " + std::string(parsed.message()));
  if (dtype && *dtype != layout.dtype)
    return absl::InvalidArgumentError(name + " holds " + DTypeName(layout.dtype) + " but --dtype says " +
                                      DTypeName(*dtype));
  // Counted without overflow: a shape whose size wraps round 2^64 would pass as a small file.
  std::size_t elements = 1;
  bool overflow = false;
  for (std::size_t d : layout.shape) overflow |= __builtin_mul_overflow(elements, d, &elements);
  overflow |= __builtin_mul_overflow(elements, ElementSize(layout.dtype), &layout.data_bytes);
  if (overflow) return absl::InvalidArgumentError(name + ": the header's shape holds more bytes than any file can");
  if (file_size < layout.data_offset || file_size - layout.data_offset != layout.data_bytes)
    return absl::InvalidArgumentError(name + ": the header promises " + std::to_string(layout.data_bytes) +
                                      " data bytes, the file has " + std::to_string(file_size - layout.data_offset));
  return layout;
}

absl::StatusOr<std::string> ParseTextNumbers(std::string_view text, DType dtype, const std::string& name) {
  std::string bytes;
  bytes.reserve(text.size() / 2);
  std::size_t line_number = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ++line_number;
    const std::string_view line = Trim(text.substr(pos, end - pos));
    pos = end + 1;
    if (line.empty() || line.front() == '#') continue;
    absl::Status s = AppendParsedNumber(dtype, line, &bytes);
    if (!s.ok())
      return absl::InvalidArgumentError(name + ":" + std::to_string(line_number) + ": " + std::string(s.message()));
  }
  return bytes;
}

// Text read without --dtype: the first of i64, u64 and f64 that holds every number in it, so that
// `gpusort gen ... --out - | gpusort sort --in - --out -` needs no flag (the order, and the numbers
// written back, are those of the dtype gen wrote: a wider one holds each of them exactly).
absl::StatusOr<DType> InferTextDType(std::string_view content, const std::string& name) {
  for (DType candidate : {DType::kInt64, DType::kUint64}) {
    if (ParseTextNumbers(content, candidate, name).ok()) return candidate;
  }
  if (absl::Status f64 = ParseTextNumbers(content, DType::kFloat64, name).status(); !f64.ok()) {
    return absl::InvalidArgumentError(std::string(f64.message()) + " (text without --dtype is read as i64, u64 or f64)");
  }
  return DType::kFloat64;
}

// A raw or text file's whole content as an array of `dtype` (raw: required, only .npy says its dtype).
absl::StatusOr<Array> RawOrTextArray(std::string content, FileFormat format, std::optional<DType> dtype,
                                     const std::string& name) {
  if (!dtype && format != FileFormat::kText) {
    return absl::InvalidArgumentError("--dtype is required to read " + name +
                                      " as raw bytes (only .npy files say their dtype)");
  }
  if (!dtype) {
    auto inferred = InferTextDType(content, name);
    if (!inferred.ok()) return inferred.status();
    dtype = *inferred;
  }
  Array array;
  array.dtype = *dtype;
  if (format == FileFormat::kRaw) {
    if (content.size() % ElementSize(array.dtype) != 0)
      return absl::InvalidArgumentError(name + " has " + std::to_string(content.size()) +
                                        " bytes, not a whole number of " + DTypeName(array.dtype) + " elements");
    array.bytes = std::move(content);
  } else {
    auto bytes = ParseTextNumbers(content, array.dtype, name);
    if (!bytes.ok()) return bytes.status();
    array.bytes = std::move(*bytes);
  }
  array.shape = {array.count()};
  return array;
}

// Standard input, read to its end (a pipe cannot be sized or sought), then parsed as a file would be.
absl::StatusOr<Array> ReadStdin(FileFormat format, std::optional<DType> dtype) {
  const std::string name = "standard input";
  std::string content;
  char buffer[1 << 16];
  for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, stdin)) > 0;) content.append(buffer, got);
  if (std::ferror(stdin)) return absl::DataLossError("cannot read " + name + ": " + std::strerror(errno));
  Array array;
  if (format == FileFormat::kNpy) {
    auto layout = CheckNpyFile(std::string_view(content).substr(0, kNpyHeadBytes), content.size(), dtype, name);
    if (!layout.ok()) return layout.status();
    array.dtype = layout->dtype;
    array.shape = std::move(layout->shape);
    array.bytes = content.substr(layout->data_offset, layout->data_bytes);
    return array;
  }
  return RawOrTextArray(std::move(content), format, dtype, name);
}

absl::StatusOr<Array> ReadArray(const std::string& path, FileFormat format,
                                std::optional<DType> dtype) {
  if (path == kStdio) return ReadStdin(format, dtype);
  auto file = Open(path, "rb");
  if (!file.ok()) return file.status();
  // A directory opens for reading on Linux and "sizes" as 2^63: refused before any buffer is made.
  struct stat st{};
  if (fstat(fileno(file->get()), &st) != 0) return absl::InternalError("cannot stat " + path);
  if (S_ISDIR(st.st_mode)) return absl::InvalidArgumentError(path + " is a directory, not an array file");
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(path + " is not a regular file (pipes and devices are not read yet); "
                                      "save the array to a file first");
  }
  auto size = FileSize(file->get(), path);
  if (!size.ok()) return size.status();
  Array array;

  if (format == FileFormat::kNpy) {
    std::string head(std::min<std::size_t>(*size, kNpyHeadBytes), '\0');
    if (std::fread(head.data(), 1, head.size(), file->get()) != head.size())
      return absl::DataLossError("short read from " + path);
    auto layout = CheckNpyFile(head, *size, dtype, path);
    if (!layout.ok()) return layout.status();
    array.dtype = layout->dtype;
    array.shape = std::move(layout->shape);
    std::fseek(file->get(), static_cast<long>(layout->data_offset), SEEK_SET);
    absl::Status read = ReadExactly(file->get(), layout->data_bytes, &array.bytes, path);
    if (!read.ok()) return read;
    return array;
  }

  // Raw without --dtype: says --dtype is needed, before any read.
  if (!dtype && format != FileFormat::kText) return RawOrTextArray({}, format, dtype, path);
  std::string content;
  absl::Status read = ReadExactly(file->get(), *size, &content, path);
  if (!read.ok()) return read;
  return RawOrTextArray(std::move(content), format, dtype, path);
}

absl::Status CheckWritable(const std::string& path, FileFormat format, DType dtype) {
  if (format != FileFormat::kNpy || !NpyDescr(dtype).empty()) return absl::OkStatus();
  if (dtype == DType::kBFloat16)
    return absl::InvalidArgumentError(
        "cannot write " + path + ": NumPy has no bfloat16 dtype, so bf16 keys have no .npy form; write them "
        "raw (.bin, --format raw) or as text (.txt), or use f16 or f32 where .npy is needed");
  return absl::InvalidArgumentError("cannot write " + path + ": " + DTypeName(dtype) + " has no .npy dtype");
}

absl::Status WriteArray(const std::string& path, FileFormat format, const Array& array) {
  if (absl::Status s = CheckWritable(path, format, array.dtype); !s.ok()) return s;
  auto file = Open(path, "wb");
  if (!file.ok()) return file.status();
  absl::Status s;
  switch (format) {
    case FileFormat::kNpy: {
      auto shape = array.shape.empty() ? std::vector<std::size_t>{array.count()} : array.shape;
      s = WriteAll(file->get(), NpyHeader(array.dtype, shape), path);
      if (s.ok()) s = WriteAll(file->get(), array.bytes, path);
      break;
    }
    case FileFormat::kRaw:
      s = WriteAll(file->get(), array.bytes, path);
      break;
    case FileFormat::kText: {
      const std::size_t width = ElementSize(array.dtype);
      std::string out;
      for (std::size_t i = 0; i < array.count() && s.ok(); ++i) {
        out += FormatNumber(array.dtype, array.bytes.data() + i * width);
        out += '\n';
        if (out.size() > (1u << 20)) {
          s = WriteAll(file->get(), out, path);
          out.clear();
        }
      }
      if (s.ok()) s = WriteAll(file->get(), out, path);
      break;
    }
  }
  if (s.ok() && std::fflush(file->get()) != 0)
    return absl::DataLossError("cannot write " + path + ": " + std::strerror(errno));
  return s;
}

}  // namespace gpusort::cli
