// Caller-controlled metadata (x-request-id, region and job ids, shared-memory names) on its way into
// log lines, error messages and reply headers (server/core/caller_text.h). The first input byte picks
// CallerText's limit (255: no limit); the rest is the caller's text.
//
// What must hold: CallerText's result is printable ASCII, at most 4 * limit + 24 bytes, and unescapes
// to exactly the bytes it shows (so no two texts read alike in a log); IsUsableRequestId is true exactly
// for 1 to 128 bytes of 0x21-0x7e, which gRPC accepts in a reply header.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "server/core/caller_text.h"

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// `shown` as CallerText escaped it, back to raw bytes; FUZZ_CHECKs each escape.
std::string Unescape(std::string_view shown) {
  std::string raw;
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const char c = shown[i];
    if (c != '\\') {
      raw.push_back(c);
      continue;
    }
    FUZZ_CHECK(i + 3 < shown.size());
    FUZZ_CHECK(shown[i + 1] == 'x');
    const int high = HexValue(shown[i + 2]), low = HexValue(shown[i + 3]);
    FUZZ_CHECK(high >= 0 && low >= 0);
    raw.push_back(static_cast<char>(high * 16 + low));
    i += 3;
  }
  return raw;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t limit = data[0] == 255 ? std::numeric_limits<std::size_t>::max() : data[0];
  const std::string_view raw(reinterpret_cast<const char*>(data + 1), size - 1);

  const std::string text = gpusort::CallerText(raw, limit);
  for (const char c : text) FUZZ_CHECK(c >= 0x20 && c <= 0x7e);
  const bool cut = raw.size() > limit;
  if (cut) FUZZ_CHECK(text.size() <= 4 * limit + 24);
  // Cut: "...(N bytes)" follows the shown bytes, with N the whole length.
  std::string_view shown = text;
  if (cut) {
    const std::string note = "...(" + std::to_string(raw.size()) + " bytes)";
    FUZZ_CHECK(text.size() >= note.size() && text.substr(text.size() - note.size()) == note);
    shown.remove_suffix(note.size());
  }
  FUZZ_CHECK(Unescape(shown) == raw.substr(0, limit));

  bool visible = !raw.empty() && raw.size() <= 128;
  for (const char c : raw) visible = visible && static_cast<unsigned char>(c) >= 0x21 && static_cast<unsigned char>(c) <= 0x7e;
  FUZZ_CHECK(gpusort::IsUsableRequestId(raw) == visible);
  return 0;
}
