// Arrays on disk in the three formats the CLI speaks: raw little-endian binary, text (one number per
// line), and NumPy .npy (1-D, or 2-D for rows). Errors name the file and what is wrong with it.
// bfloat16 has no NumPy dtype: raw and text only (writing it as .npy is refused, saying so).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/cli/client_types.h"

namespace gpusort::cli {

enum class FileFormat { kRaw, kText, kNpy };

// The path that means standard input (for --in) or standard output (for --out). Without --format,
// standard input is .npy when it starts with the .npy magic, else text; standard output is text.
inline constexpr char kStdio[] = "-";

// From an explicit --format value ("raw", "text", "npy"), else from the extension (.npy, .txt,
// .csv, anything else raw).
absl::StatusOr<FileFormat> ChooseFormat(const std::string& flag, const std::string& path);
// For a file to read: an explicit --format wins; else a file that starts with the .npy magic is .npy
// whatever its name (an .npy renamed .bin must not be read as raw keys, header included), else as
// ChooseFormat. A path that cannot be opened is left for ReadArray to report.
absl::StatusOr<FileFormat> ChooseReadFormat(const std::string& flag, const std::string& path);
// For a file to write: as ChooseFormat, except that without --format an extension the CLI does not
// write (.npz, .parquet, ...) is INVALID_ARGUMENT rather than silently raw. Raw takes .bin, .raw, or none.
absl::StatusOr<FileFormat> ChooseWriteFormat(const std::string& flag, const std::string& path);

struct Array {
  DType dtype = DType::kUnspecified;
  std::string bytes;                 // little-endian elements
  std::vector<std::size_t> shape;    // npy: as stored; raw/text: {n}
  std::size_t count() const;
};

// `dtype` is required for raw and text; for npy it is checked against the file when given.
absl::StatusOr<Array> ReadArray(const std::string& path, FileFormat format,
                                std::optional<DType> dtype);
absl::Status WriteArray(const std::string& path, FileFormat format, const Array& array);
// WriteArray's refusal of what `format` cannot hold (bf16 as .npy: NumPy has no bfloat16), checked
// without the data, so that a command can refuse before it does the work.
absl::Status CheckWritable(const std::string& path, FileFormat format, DType dtype);

// Parsing and printing of one number as text. Floats round-trip exactly (shortest form; nan, -nan,
// inf, -inf, -0 included) except that NaN payload bits are not kept. f16 and bf16 text is a decimal
// rounded once to the dtype, to nearest even (narrow_float_text.h). A number outside the dtype's range
// (a nonzero float that would round to zero or infinity) is an error naming it.
absl::Status AppendParsedNumber(DType dtype, std::string_view text, std::string* bytes);
std::string FormatNumber(DType dtype, const char* element);

// ReadArray's checks without the file, so that the fuzzers (tests/fuzz) can drive them from memory.
// `name` names the file in errors.
// A .npy file's layout as its header describes it, checked against the file's size: ReadArray reads the
// first kNpyHeadBytes (or the whole file, if shorter) into `head` and then the data bytes.
inline constexpr std::size_t kNpyHeadBytes = 65536 + 12;
struct NpyLayout {
  DType dtype = DType::kUnspecified;
  std::vector<std::size_t> shape;
  std::size_t data_offset = 0;  // the data are the file's bytes from here to its end
  std::size_t data_bytes = 0;
};
absl::StatusOr<NpyLayout> CheckNpyFile(std::string_view head, std::size_t file_size,
                                       std::optional<DType> dtype, const std::string& name);
// Text (one number per line; blank lines and '#' comments skipped) as little-endian elements.
absl::StatusOr<std::string> ParseTextNumbers(std::string_view text, DType dtype, const std::string& name);

// .npy header: the description of `array` as NumPy writes it, and its parser.
std::string NpyHeader(DType dtype, const std::vector<std::size_t>& shape);
// Parses the header at the start of `data`; on success sets dtype, shape and the data offset.
absl::Status ParseNpyHeader(std::string_view data, DType* dtype,
                            std::vector<std::size_t>* shape, std::size_t* data_offset);

}  // namespace gpusort::cli
