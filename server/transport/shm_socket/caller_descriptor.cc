#include "server/transport/shm_socket/caller_descriptor.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "server/core/descriptor_link.h"
#include "server/transport/shm_socket/closer_process.h"
#include "server/transport/shm_socket/closing_threads.h"

namespace gpusort {
namespace {

// The whole of a /proc file ("" when it cannot be read: no descriptor to spare, say).
std::string ReadProcFile(const char* path) {
  UniqueFd fd(open(path, O_RDONLY | O_CLOEXEC));
  std::string text;
  if (!fd.valid()) return text;
  char buffer[4096];
  for (ssize_t n; (n = read(fd.get(), buffer, sizeof(buffer))) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  return text;
}

// The file system type of the mount `fd`'s file lives on, from /proc/self/fdinfo ("mnt_id:") and
// /proc/self/mountinfo: the kernel's own records, read without asking the file's file system. Empty when
// the mount is none of this process's: a kernel-internal one (pipes, sockets, anonymous inodes) or one
// of another mount namespace, such as a FUSE mount a caller made in its own namespace over "/dev".
std::string MountTypeOf(int fd) {
  char path[48];
  std::snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
  const std::string info = ReadProcFile(path);
  const std::size_t at = info.find("mnt_id:");
  if (at == std::string::npos) return {};
  const std::string mount_id = std::to_string(std::strtol(info.c_str() + at + 7, nullptr, 10));
  const std::string mounts = ReadProcFile("/proc/self/mountinfo");
  for (std::size_t line = 0; line < mounts.size();) {
    std::size_t end = mounts.find('\n', line);
    if (end == std::string::npos) end = mounts.size();
    const std::string_view entry(mounts.data() + line, end - line);
    line = end + 1;
    if (!entry.starts_with(mount_id + " ")) continue;
    const std::size_t dash = entry.find(" - ");
    if (dash == std::string_view::npos) return {};
    const std::string_view rest = entry.substr(dash + 3);
    return std::string(rest.substr(0, rest.find(' ')));
  }
  return {};
}

ClosingThreads& ServersClosingThreads() {
  static auto* threads = new ClosingThreads;  // never freed: its threads may outlive every other object
  return *threads;
}

// A socket has no flush: closing the server's copy of one that the closer process also holds releases
// nothing and cannot block. (SO_TYPE is read without taking the socket's lock.)
bool IsSocket(int fd) {
  int type = 0;
  socklen_t length = sizeof(type);
  return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0;
}

}  // namespace

CallerDescriptorKind KindOfCallerDescriptor(int fd) {
  // Only shmem and hugetlbfs files take seals: for any other file F_GET_SEALS fails at once (EINVAL).
  if (fcntl(fd, F_GET_SEALS) >= 0) return CallerDescriptorKind::kSharedMemory;
  char buffer[256];
  const std::string_view link = DescriptorLinkText(fd, buffer);
  // What CUDA exports device memory as (cuMemExportToShareableHandle): a descriptor of the NVIDIA driver.
  // "anon_inode:..." is text only the kernel's pseudo file systems write (no FUSE file can). A path is the
  // caller's to choose, though: a FUSE mount over "/dev" in the caller's own mount namespace reads
  // "/dev/nvidia0" from here (found in issue 41's second attack session), so a path counts only on a
  // device file system of this process's own mounts.
  if (link.starts_with("anon_inode:")) return CallerDescriptorKind::kDeviceMemoryHandle;
  if (link.starts_with("/dev/nvidia")) {
    const std::string type = MountTypeOf(fd);
    if (type == "devtmpfs" || type == "tmpfs") return CallerDescriptorKind::kDeviceMemoryHandle;
  }
  return CallerDescriptorKind::kOther;
}

void CloseAside(uid_t owner, UniqueFd fd) {
  if (!fd.valid()) return;
  if (IsSocket(fd.get()) && HandToCloserProcess(owner, fd, /*connection=*/false)) return;
  ServersClosingThreads().Add(owner, std::move(fd), /*connection=*/false);
}

void CloseConnectionAside(uid_t owner, UniqueFd connection) {
  if (!connection.valid()) return;
  if (HandToCloserProcess(owner, connection, /*connection=*/true)) return;
  ServersClosingThreads().Add(owner, std::move(connection), /*connection=*/true);
}

std::size_t DescriptorsClosingAside() { return ServersClosingThreads().held(); }
std::size_t DescriptorsClosingAside(uid_t owner) { return ServersClosingThreads().held(owner); }

}  // namespace gpusort
