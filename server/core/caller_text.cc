#include "server/core/caller_text.h"

namespace gpusort {

std::string CallerText(std::string_view raw, std::size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string_view shown = raw.substr(0, max_bytes);
  std::string out;
  out.reserve(shown.size() + 24);
  for (const char c : shown) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '\\') {
      out.push_back(c);
    } else {
      out += "\\x";
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xf]);
    }
  }
  if (raw.size() > shown.size()) out += "...(" + std::to_string(raw.size()) + " bytes)";
  return out;
}

bool IsUsableRequestId(std::string_view id) {
  if (id.empty() || id.size() > kRequestIdMaxBytes) return false;
  for (const char c : id) {
    if (c < 0x21 || c > 0x7e) return false;  // char may be signed: bytes >= 0x80 are negative here
  }
  return true;
}

}  // namespace gpusort
