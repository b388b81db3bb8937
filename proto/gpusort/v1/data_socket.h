// The data port's wire format (sort.proto, "Sockets beside gRPC", has the rules): the one definition
// the server and the C++ client library both use. Fixed-size little-endian headers on a TCP stream; the
// bytes they announce follow them.
//
//   request, client -> server, 64 bytes, then `bytes` of keys:
//     0  u32 magic    "GSDQ" (bytes 47 53 44 51)
//     4  u16 version  1
//     6  u16 reserved 0
//     8  u32 index    the part
//    12  u32 reserved 0
//    16  u64 bytes    the part's key bytes
//    24  ticket[32]   from SortOnSockets' first event
//    56  u64 reserved 0
//   reply, server -> client, 32 bytes, then text_length bytes of reason (not OK) or key_bytes of sorted
//   keys and index_bytes of int64 positions (OK):
//     0  u32 magic    "GSDR" (bytes 47 53 44 52)
//     4  u16 version  1
//     6  u16 reserved 0
//     8  u32 code     a gRPC status code
//    12  u32 text_length
//    16  u64 key_bytes
//    24  u64 index_bytes
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "gpusort/v1/little_endian.h"

namespace gpusort::v1::data_socket {

inline constexpr std::size_t kRequestBytes = 64;
inline constexpr std::size_t kReplyBytes = 32;
inline constexpr std::size_t kTicketBytes = 32;
inline constexpr std::size_t kTicketOffset = 24;
inline constexpr std::size_t kMaxReasonBytes = 1024;
inline constexpr std::uint32_t kRequestMagic = 0x51445347;  // "GSDQ" read as a little-endian u32
inline constexpr std::uint32_t kReplyMagic = 0x52445347;    // "GSDR"
inline constexpr std::uint16_t kVersion = 1;
inline constexpr std::uint32_t kMaxParts = 64;

using Ticket = std::array<std::byte, kTicketBytes>;

struct Request {
  std::uint16_t version = kVersion;
  std::uint32_t index = 0;
  std::uint64_t bytes = 0;
  Ticket ticket{};
  bool reserved_zero = true;  // decoded: whether the reserved bytes were all zero
};

struct Reply {
  std::uint32_t code = 0;  // gRPC status code
  std::uint32_t text_length = 0;
  std::uint64_t key_bytes = 0;
  std::uint64_t index_bytes = 0;
};

namespace internal {
using little_endian::Get;
using little_endian::HasHead;
using little_endian::HasMagic;
using little_endian::Put;
using little_endian::PutHead;
}  // namespace internal

inline std::array<std::byte, kRequestBytes> EncodeRequest(const Request& r) {
  std::array<std::byte, kRequestBytes> out{};
  internal::PutHead(out, kRequestMagic, r.version);
  internal::Put(out, 8, r.index, 4);
  internal::Put(out, 16, r.bytes, 8);
  for (std::size_t i = 0; i < kTicketBytes; ++i) out[kTicketOffset + i] = r.ticket[i];
  return out;
}

// nullopt unless `in` is one request header with the request magic. The version and reserved bytes are
// for the receiver to judge.
inline std::optional<Request> DecodeRequest(std::span<const std::byte> in) {
  if (in.size() != kRequestBytes || !internal::HasMagic(in, kRequestMagic)) return std::nullopt;
  Request r;
  r.version = static_cast<std::uint16_t>(internal::Get(in, 4, 2));
  r.index = static_cast<std::uint32_t>(internal::Get(in, 8, 4));
  r.bytes = internal::Get(in, 16, 8);
  for (std::size_t i = 0; i < kTicketBytes; ++i) r.ticket[i] = in[kTicketOffset + i];
  r.reserved_zero = internal::Get(in, 6, 2) == 0 && internal::Get(in, 12, 4) == 0 && internal::Get(in, 56, 8) == 0;
  return r;
}

inline std::array<std::byte, kReplyBytes> EncodeReply(const Reply& r) {
  std::array<std::byte, kReplyBytes> out{};
  internal::PutHead(out, kReplyMagic, kVersion);
  internal::Put(out, 8, r.code, 4);
  internal::Put(out, 12, r.text_length, 4);
  internal::Put(out, 16, r.key_bytes, 8);
  internal::Put(out, 24, r.index_bytes, 8);
  return out;
}

// nullopt unless `in` is one reply header of this version whose reason fits kMaxReasonBytes.
inline std::optional<Reply> DecodeReply(std::span<const std::byte> in) {
  if (in.size() != kReplyBytes || !internal::HasHead(in, kReplyMagic, kVersion)) {
    return std::nullopt;
  }
  Reply r;
  r.code = static_cast<std::uint32_t>(internal::Get(in, 8, 4));
  r.text_length = static_cast<std::uint32_t>(internal::Get(in, 12, 4));
  r.key_bytes = internal::Get(in, 16, 8);
  r.index_bytes = internal::Get(in, 24, 8);
  if (r.text_length > kMaxReasonBytes) return std::nullopt;
  return r;
}

}  // namespace gpusort::v1::data_socket
