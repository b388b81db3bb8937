// Calls on the shared-memory socket (sort.proto, "Calls on the shared-memory socket", has the rules): the
// one definition of the records the server and the C++ client library both use. Each record is one
// SOCK_SEQPACKET message: a fixed 32-byte little-endian head, then the variable parts it counts.
//
//   call, caller -> server, 32 + token + request id + request bytes (at most kMaxCallBytes):
//     0  u32 magic     "GSCQ" (bytes 47 53 43 51)
//     4  u16 version   1
//     6  u16 method    1 = Sort (a SortRequest follows), 2 = TopK (a TopKRequest)
//     8  u32 timeout   milliseconds from arrival to the call's deadline; 0: none
//    12  u16 token     bytes of bearer token (the server's --auth-tokens-file), 0: none
//    14  u16 id        bytes of x-request-id, 0: the server makes one
//    16  u32 request   bytes of the serialized request
//    20  u32 reserved  0
//    24  u64 reserved  0
//    32  token, then request id, then the request
//   answer, server -> caller, 32 + message + response bytes:
//     0  u32 magic     "GSCP" (bytes 47 53 43 50)
//     4  u16 version   1
//     6  u16 flags     bit 0: the connection is closed and this call did not run (send it again on a new
//                      connection); the other bits 0
//     8  u32 code      a gRPC status code
//    12  u32 message   bytes of the status message (printable ASCII)
//    16  u32 response  bytes of the serialized SortResponse / TopKResponse (OK only)
//    20  u32 reserved  0
//    24  u64 reserved  0
//    32  message, then the response
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpusort/v1/little_endian.h"

namespace gpusort::v1::region_calls {

inline constexpr std::size_t kHeadBytes = 32;
// A call names ranges of registered memory; it never carries keys, so a few KiB always do.
inline constexpr std::size_t kMaxCallBytes = 64 * 1024;
inline constexpr std::size_t kMaxTokenBytes = 4096;
inline constexpr std::size_t kMaxRequestIdBytes = 128;
inline constexpr std::size_t kMaxMessageBytes = 1024;
inline constexpr std::size_t kMaxAnswerBytes = kHeadBytes + kMaxMessageBytes + kMaxCallBytes;
inline constexpr std::uint32_t kCallMagic = 0x51435347;    // "GSCQ" read as a little-endian u32
inline constexpr std::uint32_t kAnswerMagic = 0x50435347;  // "GSCP"
inline constexpr std::uint16_t kVersion = 1;

enum class Method : std::uint16_t { kSort = 1, kTopK = 2 };

struct Call {
  std::uint16_t version = kVersion;
  std::uint16_t method = static_cast<std::uint16_t>(Method::kSort);
  std::uint32_t timeout_ms = 0;
  std::string token;
  std::string request_id;
  std::string request;        // the serialized SortRequest or TopKRequest
  bool reserved_zero = true;  // decoded: whether the reserved bytes were all zero
};

inline constexpr std::uint16_t kFlagClosedNotRun = 1;

struct Answer {
  std::uint16_t flags = 0;
  std::uint32_t code = 0;  // gRPC status code
  std::string message;
  std::string response;  // the serialized response, OK only
};

namespace internal {
using little_endian::Get;
using little_endian::HasHead;
using little_endian::HasMagic;
using little_endian::Put;
using little_endian::PutHead;

// Copies `s` to `at` of `out` (sized beforehand: GCC 12 misreads vector::insert at the end as an
// out-of-bounds write, -Warray-bounds) and returns the offset after it.
inline std::size_t Copy(std::vector<std::byte>& out, std::size_t at, std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) out[at + i] = static_cast<std::byte>(s[i]);
  return at + s.size();
}
inline std::string Take(std::span<const std::byte> in, std::size_t& at, std::size_t n) {
  std::string s(reinterpret_cast<const char*>(in.data()) + at, n);
  at += n;
  return s;
}
}  // namespace internal

// Whether `in` starts as a call record does: what tells a calls connection from a registration.
inline bool LooksLikeCall(std::span<const std::byte> in) {
  return internal::HasMagic(in, kCallMagic);
}

// The caller's side. Lengths past the limits are the caller's to avoid (the server refuses them).
inline std::vector<std::byte> EncodeCall(const Call& c) {
  std::vector<std::byte> out(kHeadBytes + c.token.size() + c.request_id.size() + c.request.size());
  internal::PutHead(out, kCallMagic, c.version);
  internal::Put(out, 6, c.method, 2);
  internal::Put(out, 8, c.timeout_ms, 4);
  internal::Put(out, 12, c.token.size(), 2);
  internal::Put(out, 14, c.request_id.size(), 2);
  internal::Put(out, 16, c.request.size(), 4);
  std::size_t at = internal::Copy(out, kHeadBytes, c.token);
  at = internal::Copy(out, at, c.request_id);
  internal::Copy(out, at, c.request);
  return out;
}

// nullopt unless `in` is one whole call record: the call magic, and lengths that add up to exactly its
// size. The version, method and reserved bytes are for the receiver to judge.
inline std::optional<Call> DecodeCall(std::span<const std::byte> in) {
  if (in.size() < kHeadBytes || in.size() > kMaxCallBytes || !LooksLikeCall(in)) return std::nullopt;
  const std::size_t token = internal::Get(in, 12, 2);
  const std::size_t id = internal::Get(in, 14, 2);
  const std::size_t request = internal::Get(in, 16, 4);
  if (kHeadBytes + token + id + request != in.size()) return std::nullopt;
  Call c;
  c.version = static_cast<std::uint16_t>(internal::Get(in, 4, 2));
  c.method = static_cast<std::uint16_t>(internal::Get(in, 6, 2));
  c.timeout_ms = static_cast<std::uint32_t>(internal::Get(in, 8, 4));
  c.reserved_zero = internal::Get(in, 20, 4) == 0 && internal::Get(in, 24, 8) == 0;
  std::size_t at = kHeadBytes;
  c.token = internal::Take(in, at, token);
  c.request_id = internal::Take(in, at, id);
  c.request = internal::Take(in, at, request);
  return c;
}

// The server's side; `message` is cut to kMaxMessageBytes.
inline std::vector<std::byte> EncodeAnswer(std::uint32_t code, std::string_view message, std::string_view response,
                                           std::uint16_t flags = 0) {
  message = message.substr(0, kMaxMessageBytes);
  std::vector<std::byte> out(kHeadBytes + message.size() + response.size());
  internal::PutHead(out, kAnswerMagic, kVersion);
  internal::Put(out, 6, flags, 2);
  internal::Put(out, 8, code, 4);
  internal::Put(out, 12, message.size(), 4);
  internal::Put(out, 16, response.size(), 4);
  internal::Copy(out, internal::Copy(out, kHeadBytes, message), response);
  return out;
}

// nullopt unless `in` is one whole answer record of this version.
inline std::optional<Answer> DecodeAnswer(std::span<const std::byte> in) {
  if (in.size() < kHeadBytes || !internal::HasHead(in, kAnswerMagic, kVersion)) {
    return std::nullopt;
  }
  const std::size_t message = internal::Get(in, 12, 4);
  const std::size_t response = internal::Get(in, 16, 4);
  if (message > kMaxMessageBytes || kHeadBytes + message + response != in.size()) return std::nullopt;
  Answer a;
  a.flags = static_cast<std::uint16_t>(internal::Get(in, 6, 2));
  a.code = static_cast<std::uint32_t>(internal::Get(in, 8, 4));
  std::size_t at = kHeadBytes;
  a.message = internal::Take(in, at, message);
  a.response = internal::Take(in, at, response);
  return a;
}

}  // namespace gpusort::v1::region_calls
