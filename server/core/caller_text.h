// Text a caller sent (a request id, a region id, a job id, a name) made safe to put in a log line, an
// error message, a reply header or a metric label. A caller controls these bytes, so uncut and
// unescaped they could forge log lines (a newline), drive a terminal (ESC), grow the log without bound
// or push a reply's metadata past the client's limit (which fails every call on the connection).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpusort {

// The longest caller text any message or log line quotes, before the "...(N bytes)" note.
inline constexpr std::size_t kCallerTextMaxBytes = 64;

// `raw` with every byte outside printable ASCII (and the backslash, so that the result reads back
// unambiguously) written as \xNN,
// cut after `max_bytes` bytes of `raw` with "...(N bytes)" saying how long it was. The result is
// printable ASCII only and at most 4 * max_bytes + 24 bytes long.
std::string CallerText(std::string_view raw, std::size_t max_bytes = kCallerTextMaxBytes);

// The longest x-request-id taken from a caller.
inline constexpr std::size_t kRequestIdMaxBytes = 128;

// Whether a caller's x-request-id may be used as it is: 1 to kRequestIdMaxBytes bytes of visible
// ASCII (0x21-0x7e; no space, no control byte, nothing gRPC would refuse in a reply header). The
// server replaces any other with an id of its own.
bool IsUsableRequestId(std::string_view id);

}  // namespace gpusort
