#include "server/transport/data_port/data_socket_io.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace gpusort {
namespace {

constexpr int kPollSliceMs = 100;

// Waits until `fd` is ready for `events`, asking keep_going between slices. OK when ready.
absl::Status AwaitReady(int fd, short events, std::chrono::milliseconds idle, const KeepGoingFn& keep_going) {
  const auto give_up = std::chrono::steady_clock::now() + idle;
  for (;;) {
    if (absl::Status s = keep_going(); !s.ok()) return s;
    pollfd p{.fd = fd, .events = events, .revents = 0};
    const int ready = poll(&p, 1, kPollSliceMs);
    if (ready > 0) return absl::OkStatus();  // readable, writable, or an error the next call reports
    if (ready < 0 && errno != EINTR) return absl::UnavailableError(std::string("poll: ") + std::strerror(errno));
    if (std::chrono::steady_clock::now() >= give_up) {
      return absl::DeadlineExceededError("the data connection moved no byte for " +
                                         std::to_string(idle.count() / 1000) + " s");
    }
  }
}

}  // namespace

absl::Status ReadFully(int fd, std::byte* out, std::size_t size, std::chrono::milliseconds idle,
                       const KeepGoingFn& keep_going, bool* ended_cleanly) {
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = recv(fd, out + got, size - got, MSG_DONTWAIT);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) {
      if (ended_cleanly != nullptr) *ended_cleanly = got == 0;
      return absl::UnavailableError("the data connection ended after " + std::to_string(got) + " of " +
                                    std::to_string(size) + " bytes");
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return absl::UnavailableError(std::string("the data connection broke: ") + std::strerror(errno));
    }
    if (absl::Status s = AwaitReady(fd, POLLIN, idle, keep_going); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status WriteFully(int fd, const std::byte* data, std::size_t size, std::chrono::milliseconds idle,
                        const KeepGoingFn& keep_going) {
  std::size_t sent = 0;
  while (sent < size) {
    const ssize_t n = send(fd, data + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      return absl::UnavailableError(std::string("the data connection broke: ") + std::strerror(errno));
    }
    if (absl::Status s = AwaitReady(fd, POLLOUT, idle, keep_going); !s.ok()) return s;
  }
  return absl::OkStatus();
}

bool DropPending(int fd) {
  char sink[64 << 10];
  for (;;) {
    const ssize_t n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

void LingerAfterRefusal(int fd, std::chrono::milliseconds linger, const KeepGoingFn& keep_going) {
  shutdown(fd, SHUT_WR);
  const auto give_up = std::chrono::steady_clock::now() + linger;
  while (DropPending(fd) && std::chrono::steady_clock::now() < give_up) {
    if (!AwaitReady(fd, POLLIN, linger, keep_going).ok()) return;
  }
}

std::string SocketPeerHost(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "unknown";
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&address)->sin_addr, text, sizeof(text));
    return std::string("ipv4:") + text;
  }
  if (address.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&address)->sin6_addr, text, sizeof(text));
    return std::string("ipv6:[") + text + "]";
  }
  return "unknown";
}

}  // namespace gpusort
