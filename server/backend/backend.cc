#include "server/backend/backend.h"

#include <cstring>
#include <string>

namespace gpusort {

std::string_view BackendKindName(BackendKind kind) {
  return kind == BackendKind::kCuda ? "cuda" : "cpu";
}

absl::Status Backend::SortPinned(const SortSpec& spec, std::span<const std::byte> keys_in,
                                 const SortBuffers& buffers, const Cancellation& cancellation,
                                 ExecutionReport& report) {
  if (keys_in.data() != buffers.keys.data() && !keys_in.empty()) {
    std::memcpy(buffers.keys.data(), keys_in.data(), keys_in.size());
  }
  return Sort(spec, buffers, cancellation, report);
}

absl::Status Backend::SortBatch(const SortSpec& spec, std::span<BatchItem> items,
                                const Cancellation& cancellation) {
  for (BatchItem& item : items) {
    absl::Status s = Sort(spec, item.buffers, cancellation, *item.report);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status AlgorithmUnavailable(std::string_view method, Algorithm asked,
                                  const std::vector<Algorithm>& available,
                                  std::string_view backend) {
  // Debian's abseil has its own string_view, so messages are built with std::string.
  std::string list = "auto";
  for (Algorithm a : available) (list += ", ") += AlgorithmName(a);
  std::string message(method);
  message += " algorithm '";
  message += AlgorithmName(asked);
  message += "' is not available on the ";
  message += backend;
  message += " backend; available: " + list;
  return absl::UnimplementedError(message);
}

}  // namespace gpusort
