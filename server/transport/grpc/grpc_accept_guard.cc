#include "server/transport/grpc/grpc_accept_guard.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string_view>
#include <thread>

#include <spdlog/spdlog.h>

#include "server/core/descriptor_link.h"

namespace gpusort {
namespace {

using AcceptFn = int (*)(int, sockaddr*, socklen_t*, int);

// The accept4 this one stands in front of: a sanitizer's interceptor where there is one, else libc's.
int NextAccept4(int fd, sockaddr* address, socklen_t* length, int flags) {
  static const AcceptFn next = reinterpret_cast<AcceptFn>(dlsym(RTLD_NEXT, "accept4"));
  if (next == nullptr) return static_cast<int>(syscall(SYS_accept4, fd, address, length, flags));
  return next(fd, address, length, flags);
}

// The guards by port. Looked up on every accept of the process: a count first, so that a process with no
// guard pays one atomic load.
struct Registry {
  std::atomic<int> count{0};
  std::mutex mutex;
  std::map<int, std::weak_ptr<GrpcAcceptGuard>> by_port;
};
Registry& Guards() {
  static Registry* registry = new Registry;  // never freed: gRPC's threads may accept during exit
  return *registry;
}

int LocalPort(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return -1;
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  return -1;
}

std::shared_ptr<GrpcAcceptGuard> GuardFor(int listen_fd) {
  Registry& r = Guards();
  if (r.count.load(std::memory_order_acquire) == 0) return nullptr;
  const int port = LocalPort(listen_fd);
  if (port <= 0) return nullptr;
  std::lock_guard lock(r.mutex);
  auto it = r.by_port.find(port);
  return it == r.by_port.end() ? nullptr : it->second.lock();
}

// The inode of the socket `fd` names now, from its /proc link ("socket:[123]"). 0 when it names no socket.
std::uint64_t SocketInode(int fd) {
  char link[64];
  const std::string_view text = DescriptorLinkText(fd, link);
  if (!text.starts_with("socket:[")) return 0;
  return std::strtoull(std::string(text.substr(8)).c_str(), nullptr, 10);
}

// One descriptor kept open for Shed: when the process has none left, closing it lets one waiting
// connection be accepted and closed.
std::mutex reserve_mutex;
int reserve_fd = -1;

}  // namespace

std::shared_ptr<GrpcAcceptGuard> GrpcAcceptGuard::Guard(int port, std::string name, std::size_t max_connections) {
  {
    std::lock_guard lock(reserve_mutex);
    if (reserve_fd < 0) reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  std::shared_ptr<GrpcAcceptGuard> guard(new GrpcAcceptGuard(port, std::move(name), max_connections));
  Registry& r = Guards();
  std::lock_guard lock(r.mutex);
  r.by_port[port] = guard;
  r.count.store(static_cast<int>(r.by_port.size()), std::memory_order_release);
  return guard;
}

GrpcAcceptGuard::GrpcAcceptGuard(int port, std::string name, std::size_t max_connections)
    : port_(port), name_(std::move(name)), max_connections_(max_connections) {}

GrpcAcceptGuard::~GrpcAcceptGuard() {
  Registry& r = Guards();
  std::lock_guard lock(r.mutex);
  auto it = r.by_port.find(port_);
  if (it != r.by_port.end() && it->second.expired()) r.by_port.erase(it);
  r.count.store(static_cast<int>(r.by_port.size()), std::memory_order_release);
}

int GrpcAcceptGuard::Accept(int listen_fd, void* address, void* address_length, int flags) {
  auto* length = static_cast<socklen_t*>(address_length);
  const socklen_t length_in = length != nullptr ? *length : 0;
  for (;;) {
    if (length != nullptr) *length = length_in;
    const int fd = NextAccept4(listen_fd, static_cast<sockaddr*>(address), length, flags);
    if (fd >= 0) {
      if (Take(fd)) {
        accepting_.store(true);
        accepted_.fetch_add(1);
        return fd;
      }
      ::close(fd);  // its caller sees the connection closed and may retry, here or elsewhere
      Refused("holds its most connections already", 0);
      continue;  // the next waiting connection, until none waits (EAGAIN)
    }
    const int error = errno;
    if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) {
      Refused("cannot accept", error);
      Shed(listen_fd);
      errno = EAGAIN;  // gRPC waits for the next connection instead of ending its accept loop
      return -1;
    }
    errno = error;
    return -1;
  }
}

bool GrpcAcceptGuard::Take(int fd) {
  const std::uint64_t inode = SocketInode(fd);
  std::lock_guard lock(mutex_);
  std::erase_if(open_, [fd](const auto& c) { return c.first == fd; });  // that number was closed and reused
  if (open_.size() >= max_connections_) {
    std::erase_if(open_, [](const auto& c) { return SocketInode(c.first) != c.second; });
  }
  if (open_.size() >= max_connections_) return false;
  open_.emplace_back(fd, inode);
  return true;
}

std::size_t GrpcAcceptGuard::open_connections() {
  std::lock_guard lock(mutex_);
  std::erase_if(open_, [](const auto& c) { return SocketInode(c.first) != c.second; });
  return open_.size();
}

void GrpcAcceptGuard::Shed(int listen_fd) {
  std::lock_guard lock(reserve_mutex);
  for (int i = 0; i < 64 && reserve_fd >= 0; ++i) {
    ::close(reserve_fd);
    const int fd = NextAccept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) ::close(fd);
    reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) break;  // none waits (or another thread took the freed descriptor first)
  }
  if (reserve_fd < 0) reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void GrpcAcceptGuard::Refused(const char* why, int error) {
  accepting_.store(false);
  refused_.fetch_add(1);
  std::lock_guard lock(mutex_);
  ++refused_since_log_;
  const Clock::time_point now = Clock::now();
  if (now - last_log_ < std::chrono::seconds(1)) return;  // at most a line a second
  spdlog::warn("{}: {} ({}): refused {} connection(s) since the last such line; health is NOT_SERVING until it "
               "accepts again",
               name_, why,
               error != 0 ? std::strerror(error) : "at most " + std::to_string(max_connections_) + " open at once",
               refused_since_log_);
  last_log_ = now;
  refused_since_log_ = 0;
}

}  // namespace gpusort

// The interposed accept4 (grpc_accept_guard.h says why): the guarded ports' accepts go through their
// guard, every other accept straight on.
extern "C" int accept4(int fd, struct sockaddr* __restrict address, socklen_t* __restrict length, int flags) {
  const std::shared_ptr<gpusort::GrpcAcceptGuard> guard = gpusort::GuardFor(fd);
  if (guard == nullptr) return gpusort::NextAccept4(fd, address, length, flags);
  return guard->Accept(fd, address, length, flags);
}
