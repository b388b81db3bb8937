// Little-endian fields of the fixed-size records beside sort.proto (region_socket.h, data_socket.h):
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

}  // namespace gpusort::v1::little_endian
