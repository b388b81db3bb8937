#include "server/service/caller_descriptor.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>

#include "server/core/descriptor_link.h"
#include "server/core/thread_name.h"

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

// Reads out what `connection` still holds and closes each descriptor that came in it, here, one by one;
// stops at its end, an error, or when the queue is empty (the caller can send no more once SHUT_RD is
// done: its sends fail with EPIPE).
void DrainConnection(int connection) {
  shutdown(connection, SHUT_RD);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedDescriptors)];
  char byte;
  for (;;) {
    iovec iov{&byte, 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(connection, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;
    bool had_fds = false;
    ForEachPassedDescriptor(msg, [&had_fds](int fd) {
      close(fd);  // may block: this is the owner's thread
      had_fds = true;
    });
    if (n == 0 && !had_fds) return;  // its end
  }
}

// One closing thread per user with something to close, started on demand and ended when its queue is
// empty, never joined: a close it is blocked in must not hold the server's shutdown. The state is never
// freed, for the same reason (a thread may outlive every other object).
class Closers {
 public:
  static Closers& Get() {
    static Closers* closers = new Closers;
    return *closers;
  }
  void Add(uid_t owner, UniqueFd fd, bool connection) {
    std::lock_guard lock(mutex_);
    User& user = users_[owner];
    user.queue.push_back({std::move(fd), connection});
    ++user.held;
    ++held_;
    if (!user.running) {
      try {
        std::thread([this, owner] { Run(owner); }).detach();
        user.running = true;
      } catch (const std::system_error&) {
        // No thread to be had now: the descriptor waits, counted against its user, for the next one.
      }
    }
  }
  std::size_t held() {
    std::lock_guard lock(mutex_);
    return held_;
  }
  std::size_t held(uid_t owner) {
    std::lock_guard lock(mutex_);
    const auto it = users_.find(owner);
    return it == users_.end() ? 0 : it->second.held;
  }

 private:
  struct Item {
    UniqueFd fd;
    bool connection = false;
  };
  struct User {
    std::deque<Item> queue;
    std::size_t held = 0;  // queued, and the one being closed
    bool running = false;
  };

  void Run(uid_t owner) {
    NameThisThread("gs-fd-closer");
    std::unique_lock lock(mutex_);
    for (;;) {
      User& user = users_.at(owner);  // std::map: the entry stays where it is while others come and go
      if (user.queue.empty()) {
        users_.erase(owner);  // nothing held: the next descriptor starts a new thread
        return;
      }
      Item item = std::move(user.queue.front());
      user.queue.pop_front();
      lock.unlock();
      if (item.connection) DrainConnection(item.fd.get());
      item.fd.reset();  // may block: nobody waits for it
      lock.lock();
      --users_.at(owner).held;
      --held_;
    }
  }

  std::mutex mutex_;
  std::map<uid_t, User> users_;
  std::size_t held_ = 0;
};

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
  if (fd.valid()) Closers::Get().Add(owner, std::move(fd), /*connection=*/false);
}

void CloseConnectionAside(uid_t owner, UniqueFd connection) {
  if (connection.valid()) Closers::Get().Add(owner, std::move(connection), /*connection=*/true);
}

std::size_t DescriptorsClosingAside() { return Closers::Get().held(); }
std::size_t DescriptorsClosingAside(uid_t owner) { return Closers::Get().held(owner); }

}  // namespace gpusort
