// Little-endian fields of the records beside sort.proto (region_socket.h, region_calls.h, data_socket.h):
// written and read byte by byte, so that neither side depends on its own byte order or alignment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace gpusort::v1::little_endian {

inline void Put(std::span<std::byte> out, std::size_t at, std::uint64_t value, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) out[at + i] = static_cast<std::byte>((value >> (8 * i)) & 0xff);
}

inline std::uint64_t Get(std::span<const std::byte> in, std::size_t at, std::size_t bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < bytes; ++i) value |= std::uint64_t{std::to_integer<std::uint8_t>(in[at + i])} << (8 * i);
  return value;
}

// Every record beside sort.proto starts with the same head: a 4-byte magic that names its kind (ASCII, read as
// a little-endian u32) and a 2-byte version. What follows is each record's own.
inline void PutHead(std::span<std::byte> out, std::uint32_t magic, std::uint16_t version) {
  Put(out, 0, magic, 4);
  Put(out, 4, version, 2);
}
inline bool HasMagic(std::span<const std::byte> in, std::uint32_t magic) {
  return in.size() >= 4 && Get(in, 0, 4) == magic;
}
inline bool HasHead(std::span<const std::byte> in, std::uint32_t magic, std::uint16_t version) {
  return in.size() >= 6 && HasMagic(in, magic) && Get(in, 4, 2) == version;
}

}  // namespace gpusort::v1::little_endian
