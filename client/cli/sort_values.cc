#include "client/cli/sort_values.h"

#include <utility>

namespace gpusort::cli {

// `gpusort sort --values`: the values file (a .npy of any dtype, one per key, kept as that dtype for
// --values-out; or raw bytes, --value-width each), checked against the keys. nullopt without --values.
absl::StatusOr<std::optional<Array>> ReadValues(const std::string& path, uint32_t width, const std::string& out,
                                                std::size_t keys, bool with_indices) {
  if (path.empty()) {
    if (!out.empty() || width != 0) return absl::InvalidArgumentError("--values-out and --value-width need --values");
    return std::optional<Array>();
  }
  if (out.empty()) return absl::InvalidArgumentError("--values needs --values-out: where the moved values go");
  if (with_indices) {
    return absl::InvalidArgumentError("--values moves values; --argsort and --indices-out ask for the permutation "
                                      "instead (one payload a sort)");
  }
  auto format = ChooseReadFormat("", path);
  if (!format.ok()) return format.status();
  Array values;
  if (*format == FileFormat::kNpy) {
    auto read = ReadArray(path, FileFormat::kNpy, std::nullopt);
    if (!read.ok()) return read.status();
    values = *std::move(read);
    if (values.count() != keys) {
      return absl::InvalidArgumentError(path + " holds " + std::to_string(values.count()) + " values for " +
                                        std::to_string(keys) + " keys");
    }
    return std::optional<Array>(std::move(values));
  }
  if (width < 1 || width > 256) {
    return absl::InvalidArgumentError("a raw --values file needs --value-width, 1 to 256 bytes a value");
  }
  auto read = ReadArray(path, FileFormat::kRaw, DType::kUint8);
  if (!read.ok()) return read.status();
  values = *std::move(read);
  if (values.bytes.size() != keys * width) {
    return absl::InvalidArgumentError(path + " holds " + std::to_string(values.bytes.size()) + " bytes, not " +
                                      std::to_string(keys) + " values of " + std::to_string(width));
  }
  return std::optional<Array>(std::move(values));
}

}  // namespace gpusort::cli
