// The shared-memory registration socket's wire format (sort.proto, "Shared memory", has the rules): the
// one definition the server and the C++ client library both use. Fixed-size little-endian records, each
// one SOCK_SEQPACKET message, so that neither side ever parses a length or a partial record.
//
//   request, client -> server, 32 bytes, with exactly one descriptor attached (SCM_RIGHTS):
//     0  u32 magic    "GSRQ" (bytes 47 53 52 51)
//     4  u16 version  1
//     6  u16 kind     1 = host memory: the descriptor is a sealed memfd; 2 = device memory: the
//                     descriptor is exported CUDA memory (other kinds are refused)
//     8  u64 size     bytes to map from the start of the memory
//    16  u64 reserved 0
//    24  u64 reserved 0
//   reply, server -> client, 512 bytes:
//     0  u32 magic    "GSRP" (bytes 47 53 52 50)
//     4  u16 version  1
//     6  u16 reserved 0
//     8  u32 code     a gRPC status code: 0 OK, else why the registration was refused
//    12  u32 length   bytes of `text` used (at most 496)
//    16  text[496]    OK: the region id (32 lowercase hex digits); else the reason, printable ASCII
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gpusort/v1/little_endian.h"

namespace gpusort::v1::region_socket {

inline constexpr std::size_t kRequestBytes = 32;
inline constexpr std::size_t kReplyBytes = 512;
inline constexpr std::size_t kReplyTextOffset = 16;
inline constexpr std::size_t kReplyTextMaxBytes = kReplyBytes - kReplyTextOffset;
inline constexpr std::uint32_t kRequestMagic = 0x51525347;  // "GSRQ" read as a little-endian u32
inline constexpr std::uint32_t kReplyMagic = 0x50525347;    // "GSRP"
inline constexpr std::uint16_t kVersion = 1;

// What the attached descriptor is. Values other than these are answered UNIMPLEMENTED.
enum class RegionKind : std::uint16_t {
  kHostMemory = 1,    // a memfd sealed against shrinking, opened read-write
  kDeviceMemory = 2,  // CUDA device memory exported with cuMemExportToShareableHandle (POSIX descriptor)
};

struct Request {
  std::uint16_t version = kVersion;
  std::uint16_t kind = static_cast<std::uint16_t>(RegionKind::kHostMemory);
  std::uint64_t size = 0;
  bool reserved_zero = true;  // decoded: whether the reserved bytes were all zero
};

struct Reply {
  std::uint32_t code = 0;  // gRPC status code
  std::string text;        // the region id, or the reason
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
  internal::Put(out, 6, r.kind, 2);
  internal::Put(out, 8, r.size, 8);
  return out;
}

// nullopt unless `in` is exactly one request record with the request magic. The version, kind and
// reserved bytes are for the receiver to judge (it answers each with its own message).
inline std::optional<Request> DecodeRequest(std::span<const std::byte> in) {
  if (in.size() != kRequestBytes || !internal::HasMagic(in, kRequestMagic)) return std::nullopt;
  Request r;
  r.version = static_cast<std::uint16_t>(internal::Get(in, 4, 2));
  r.kind = static_cast<std::uint16_t>(internal::Get(in, 6, 2));
  r.size = internal::Get(in, 8, 8);
  r.reserved_zero = internal::Get(in, 16, 8) == 0 && internal::Get(in, 24, 8) == 0;
  return r;
}

// `text` is cut to kReplyTextMaxBytes.
inline std::array<std::byte, kReplyBytes> EncodeReply(std::uint32_t code, std::string_view text) {
  std::array<std::byte, kReplyBytes> out{};
  text = text.substr(0, kReplyTextMaxBytes);
  internal::PutHead(out, kReplyMagic, kVersion);
  internal::Put(out, 8, code, 4);
  internal::Put(out, 12, text.size(), 4);
  for (std::size_t i = 0; i < text.size(); ++i) out[kReplyTextOffset + i] = static_cast<std::byte>(text[i]);
  return out;
}

// nullopt unless `in` is exactly one reply record of this version with a text length that fits.
inline std::optional<Reply> DecodeReply(std::span<const std::byte> in) {
  if (in.size() != kReplyBytes || !internal::HasHead(in, kReplyMagic, kVersion)) {
    return std::nullopt;
  }
  const std::uint64_t length = internal::Get(in, 12, 4);
  if (length > kReplyTextMaxBytes) return std::nullopt;
  Reply r;
  r.code = static_cast<std::uint32_t>(internal::Get(in, 8, 4));
  r.text.assign(reinterpret_cast<const char*>(in.data()) + kReplyTextOffset, length);
  return r;
}

}  // namespace gpusort::v1::region_socket
