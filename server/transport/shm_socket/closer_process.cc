#include "server/transport/shm_socket/closer_process.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

#include <spdlog/spdlog.h>

#include "server/transport/shm_socket/caller_descriptor.h"
#include "server/transport/shm_socket/closing_threads.h"

namespace gpusort {
namespace {

// One record on the socket between the server and its closer process (SOCK_SEQPACKET: whole or not at
// all). An item carries one descriptor; an acknowledgement says the server's copies of every item up to
// `sequence` are closed, so the closer process's are now the last ones.
struct Record {
  std::uint32_t type;  // kItem or kAcknowledgement
  std::uint32_t owner;
  std::uint64_t sequence;
  std::uint32_t connection;
  std::uint32_t unused;
};
constexpr std::uint32_t kItem = 1;
constexpr std::uint32_t kAcknowledgement = 2;

// The server's end. Never freed: a hand-over may race with StopCloserProcess.
struct ServerEnd {
  std::mutex mutex;
  int socket = -1;
  pid_t pid = -1;
  std::uint64_t sequence = 0;  // of the last item sent
};
ServerEnd& Server() {
  static auto* end = new ServerEnd;
  return *end;
}

bool Send(int socket, const Record& record, int fd) {
  iovec iov{const_cast<Record*>(&record), sizeof(record)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  ssize_t n;
  do {
    n = sendmsg(socket, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof(record));
}

std::size_t RaiseOwnLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  limit.rlim_cur = limit.rlim_max;
  (void)setrlimit(RLIMIT_NOFILE, &limit);
  getrlimit(RLIMIT_NOFILE, &limit);
  return static_cast<std::size_t>(limit.rlim_cur);
}

struct PendingItem {
  std::uint64_t sequence;
  uid_t owner;
  UniqueFd fd;
  bool connection;
};

// The closer process: receives items, holds each until the server has closed its copy, then closes it
// on its owner's thread. Stops taking items while its own table is nearly full (the server's sends then
// fail and it closes them its own way). Ends when the server's end closes.
[[noreturn]] void RunCloserProcess(int socket) {
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  const std::size_t limit = RaiseOwnLimit();
  auto* closers = new ClosingThreads;  // never freed: its threads may be blocked in a close at exit
  std::deque<PendingItem> pending;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedDescriptors)];
  for (;;) {
    if (closers->held() + pending.size() + kMaxPassedDescriptors + 64 >= limit) {
      pollfd hangup{socket, POLLRDHUP, 0};  // full: let the closes catch up, unless the server is gone
      if (poll(&hangup, 1, 10) == 1 && (hangup.revents & (POLLHUP | POLLRDHUP)) != 0) _exit(0);
      continue;
    }
    Record record{};
    iovec iov{&record, sizeof(record)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0);  // the server is gone
    UniqueFd fd;
    ForEachPassedDescriptor(msg, [&fd](int received) { fd = UniqueFd(received); });  // the server sends one
    if (n != sizeof(record)) continue;
    if (record.type == kItem && fd.valid()) {
      pending.push_back({record.sequence, record.owner, std::move(fd), record.connection != 0});
    } else if (record.type == kAcknowledgement) {
      while (!pending.empty() && pending.front().sequence <= record.sequence) {
        PendingItem& item = pending.front();
        closers->Add(item.owner, std::move(item.fd), item.connection);
        pending.pop_front();
      }
    }
  }
}

}  // namespace

absl::Status StartCloserProcess() {
  ServerEnd& server = Server();
  std::lock_guard lock(server.mutex);
  if (server.socket >= 0) return absl::OkStatus();
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
    return absl::InternalError(std::string("closer process: socketpair: ") + std::strerror(errno));
  }
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    close(ends[0]);
    close(ends[1]);
    return absl::InternalError(std::string("closer process: fork: ") + std::strerror(errno));
  }
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0);
    prctl(PR_SET_NAME, "gpusort-closer");
    // Nothing of the server's stays open here (its listeners, the GPU's files): only the socket and the
    // standard streams.
    close(ends[0]);
    const int socket = ends[1];
    if (socket > 3) close_range(3, static_cast<unsigned>(socket - 1), 0);
    close_range(static_cast<unsigned>(socket + 1), ~0U, 0);
    RunCloserProcess(socket);
  }
  close(ends[1]);
  server.socket = ends[0];
  server.pid = child;
  return absl::OkStatus();
}

bool HandToCloserProcess(uid_t owner, UniqueFd& fd, bool connection) {
  ServerEnd& server = Server();
  std::lock_guard lock(server.mutex);
  if (server.socket < 0 || !fd.valid()) return false;
  const Record item{.type = kItem,
                    .owner = static_cast<std::uint32_t>(owner),
                    .sequence = server.sequence + 1,
                    .connection = connection ? 1u : 0u,
                    .unused = 0};
  if (!Send(server.socket, item, fd.get())) {
    const int error = errno;
    if (error == EPIPE || error == ECONNRESET || error == ENOTCONN) {
      spdlog::warn("the closer process (pid {}) is gone: descriptors callers hand over are closed on the server's "
                   "own per-user threads from now on",
                   server.pid);
      close(server.socket);
      server.socket = -1;
      (void)waitpid(server.pid, nullptr, WNOHANG);  // reaped now if it has finished exiting
      server.pid = -1;
    }
    return false;
  }
  ++server.sequence;
  fd.reset();  // not the last copy: the closer process holds one until told this is done
  const Record done{.type = kAcknowledgement, .owner = 0, .sequence = server.sequence, .connection = 0, .unused = 0};
  // Should the queue be full just now, the next acknowledgement covers this item too.
  (void)Send(server.socket, done, -1);
  return true;
}

void StopCloserProcess() {
  ServerEnd& server = Server();
  std::lock_guard lock(server.mutex);
  if (server.socket < 0) return;
  // Killed rather than asked: a thread of it may be blocked in a close. Its exit closes what it held,
  // lingering sockets at once (the kernel does not linger for a process that exits).
  kill(server.pid, SIGKILL);
  int status = 0;
  while (waitpid(server.pid, &status, 0) < 0 && errno == EINTR) {
  }
  close(server.socket);
  server.socket = -1;
  server.pid = -1;
}

pid_t CloserProcessId() {
  ServerEnd& server = Server();
  std::lock_guard lock(server.mutex);
  return server.socket >= 0 ? server.pid : -1;
}

bool CloserProcessRunning() {
  ServerEnd& server = Server();
  std::lock_guard lock(server.mutex);
  return server.socket >= 0;
}

}  // namespace gpusort
