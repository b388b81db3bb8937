// A text file given to the CLI (`gpusort sort --in keys.txt --dtype f32`): one number per line, parsed
// as ReadArray does (client/cli/array_file.h, ParseTextNumbers), from memory. The first input byte picks
// the dtype; the rest is the file.
//
// What must hold for a file it accepts: one element per number line, each written with at most one
// sign, and each element printed (FormatNumber, as `gpusort` writes text) reads back to the same bits
// (NaNs: the same sign; their payloads are not kept).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "client/cli/array_file.h"
#include "client/cli/dtype_names.h"
#include "client/cli/narrow_float.h"
#include "fuzz_check.h"

namespace {

using namespace gpusort;

using client::DType;
constexpr DType kDTypes[] = {DType::kInt32,   DType::kUint32, DType::kInt64,   DType::kUint64,
                             DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                             DType::kInt16,   DType::kUint16, DType::kInt8,    DType::kUint8};
constexpr std::size_t kDTypeCount = sizeof(kDTypes) / sizeof(kDTypes[0]);

// A NaN prints as nan or -nan, so only its sign survives text.
template <typename T>
bool IsNan(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x);
  else return std::isnan(cli::ToFloat(x));  // float16 and bfloat16
}
template <typename T>
bool SignBit(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::signbit(x);
  else return (x.bits >> 15) != 0;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// The number lines: not blank, not a '#' comment (after the same trimming the reader does).
std::size_t NumberLines(std::string_view text) {
  std::size_t count = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    while (!line.empty() && IsSpace(line.front())) line.remove_prefix(1);
    while (!line.empty() && IsSpace(line.back())) line.remove_suffix(1);
    FUZZ_CHECK(line.empty() || line.front() == '#' || line.size() < 2 ||
               !((line[0] == '+' || line[0] == '-') && (line[1] == '+' || line[1] == '-')));
    if (!line.empty() && line.front() != '#') ++count;
    pos = end + 1;
  }
  return count;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const DType dtype = kDTypes[data[0] % kDTypeCount];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  absl::StatusOr<std::string> bytes = cli::ParseTextNumbers(text, dtype, "fuzz.txt");
  if (!bytes.ok()) return 0;
  const std::size_t width = cli::ElementSize(dtype);
  FUZZ_CHECK(bytes->size() % width == 0);
  FUZZ_CHECK(bytes->size() / width == NumberLines(text));
  for (std::size_t i = 0; i < bytes->size(); i += width) {
    const std::string printed = cli::FormatNumber(dtype, bytes->data() + i);
    std::string back;
    FUZZ_CHECK(cli::AppendParsedNumber(dtype, printed, &back).ok());
    cli::VisitDType(dtype, [&](auto tag) {
      using T = decltype(tag);
      T a, b;
      std::memcpy(&a, bytes->data() + i, sizeof a);
      std::memcpy(&b, back.data(), sizeof b);
      if constexpr (cli::kIsFloatKey<T>) {
        if (IsNan(a)) {
          FUZZ_CHECK(IsNan(b) && SignBit(a) == SignBit(b));
          return;
        }
      }
      FUZZ_CHECK(std::memcmp(&a, &b, sizeof a) == 0);
    });
  }
  return 0;
}
