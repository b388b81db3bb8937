#include "client/src/data_connections.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace gpusort::client_internal {

DataConnections::~DataConnections() {
  for (int fd : kept_) close(fd);
}

absl::StatusOr<int> DataConnections::Connect(int port) const {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int e = getaddrinfo(host_.c_str(), service.c_str(), &hints, &found); e != 0) {
    return absl::UnavailableError("cannot resolve the data port's host " + host_ + ": " + gai_strerror(e));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, freeaddrinfo);
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return fd;
    }
    why = std::strerror(errno);
    close(fd);
  }
  return absl::UnavailableError("cannot connect to the data port " + host_ + ":" + service + ": " + why);
}

absl::StatusOr<std::vector<int>> DataConnections::Take(std::size_t count, int port) {
  std::vector<int> fds;
  {
    std::lock_guard lock(mutex_);
    if (port != port_) {  // another server (or the same restarted): the kept ones lead elsewhere
      for (int fd : kept_) close(fd);
      kept_.clear();
      port_ = port;
    }
    while (!kept_.empty() && fds.size() < count) {
      fds.push_back(kept_.back());
      kept_.pop_back();
    }
  }
  while (fds.size() < count) {
    absl::StatusOr<int> fd = Connect(port);
    if (!fd.ok()) {
      for (int f : fds) close(f);
      return fd.status();
    }
    fds.push_back(*fd);
  }
  return fds;
}

void DataConnections::Give(std::vector<int> fds, int port) {
  std::lock_guard lock(mutex_);
  if (port != port_) {
    for (int fd : fds) close(fd);
    return;
  }
  kept_.insert(kept_.end(), fds.begin(), fds.end());
}

std::string DataHostOf(const std::string& target_uri, const std::string& authority) {
  if (target_uri.starts_with("unix:") || target_uri.starts_with("unix-abstract:")) return "127.0.0.1";
  std::string host = authority.empty() ? target_uri : authority;
  if (host.starts_with("dns:")) host = host.substr(host.rfind('/') == std::string::npos ? 4 : host.rfind('/') + 1);
  if (host.starts_with("ipv4:") || host.starts_with("ipv6:")) host = host.substr(5, host.find(',') - 5);
  if (const std::size_t colon = host.rfind(':'); colon != std::string::npos && host.find(']') < colon) {
    host = host.substr(0, colon);  // "[::1]:50051"
  } else if (host.find(':') == host.rfind(':') && host.find(':') != std::string::npos) {
    host = host.substr(0, host.find(':'));  // "name:50051"
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host;
}

}  // namespace gpusort::client_internal
