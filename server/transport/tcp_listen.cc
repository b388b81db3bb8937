#include "server/transport/tcp_listen.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>

namespace gpusort {

absl::StatusOr<TcpListener> ListenTcp(const std::string& host, int port, int backlog, const std::string& what) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int e = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); e != 0) {
    return absl::InvalidArgumentError("cannot resolve " + what + "'s host " + host + ": " + gai_strerror(e));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, freeaddrinfo);
  TcpListener listener;
  listener.fd = UniqueFd(socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener.fd.valid()) return absl::UnavailableError(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  setsockopt(listener.fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(listener.fd.get(), found->ai_addr, found->ai_addrlen) != 0 || listen(listener.fd.get(), backlog) != 0) {
    return absl::UnavailableError("cannot listen on " + what + " " + host + ":" + service + ": " +
                                  std::strerror(errno));
  }
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  getsockname(listener.fd.get(), reinterpret_cast<sockaddr*>(&address), &length);
  listener.port = ntohs(address.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&address)->sin6_port
                                                      : reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  return listener;
}

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address) {
  const std::size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
  const std::string port_text = colon == std::string::npos ? address : address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int port = -1;
  const auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535 ||
      host.find_first_of("[]") != std::string::npos) {
    return absl::InvalidArgumentError("expected host:port (\"0.0.0.0:9464\", \"[::1]:9464\") or a port");
  }
  return std::pair<std::string, int>{host.empty() ? "0.0.0.0" : host, port};
}

}  // namespace gpusort
