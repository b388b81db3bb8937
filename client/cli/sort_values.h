// `gpusort sort --values`: the values file that moves with the keys (PAYLOAD_VALUES), read and checked
// before the server is asked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "client/cli/array_file.h"

namespace gpusort::cli {

// `gpusort sort --values`: the values file (a .npy of any dtype, one per key, kept as that dtype for
// --values-out; or raw bytes, --value-width each), checked against the keys. nullopt without --values.
absl::StatusOr<std::optional<Array>> ReadValues(const std::string& path, uint32_t width, const std::string& out,
                                                std::size_t keys, bool with_indices);

}  // namespace gpusort::cli
