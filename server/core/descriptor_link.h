// The text of /proc/self/fd/N ("socket:[123]", "anon_inode:[...]", a path): the kernel writes it from its
// own records (d_path), without asking the file's file system, so reading it cannot block on a FUSE
// daemon as fstat can, and it needs no descriptor to spare.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <string_view>

namespace gpusort {

// Empty when `fd` is not open (or the link cannot be read).
template <std::size_t N>
std::string_view DescriptorLinkText(int fd, char (&buffer)[N]) {
  char path[40];
  std::snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(path, buffer, N - 1);
  return n <= 0 ? std::string_view{} : std::string_view(buffer, static_cast<std::size_t>(n));
}

}  // namespace gpusort
