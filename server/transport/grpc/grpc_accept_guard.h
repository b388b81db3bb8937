// gRPC's listening ports, kept accepting (issue 41). gRPC 1.51 (Debian 12's) ends a listener's accept
// loop on any accept error but EAGAIN, ECONNABORTED and EINTR (tcp_server_posix.cc, grpc/grpc#20418):
// after one EMFILE the port never accepts again, while the process keeps running and health says
// SERVING. We cannot change gRPC, so the server defines accept4 itself: the executable's definition
// comes first in the dynamic linker's search, so libgrpc's calls reach it, and it calls the next one
// (the sanitizers' interceptor, or libc's). For a port guarded here it
//   - turns a failure for want of descriptors or memory into EAGAIN, which gRPC answers by waiting for
//     the next connection, after closing the connections that wait (with a descriptor kept in reserve
//     for this), so that their callers are told at once and retry;
//   - keeps the port's open connections at most `max_connections`, closing newer ones as they come;
//   - remembers whether the port could accept its last connection (GpusortServer's health uses it).
// Any other listener (ours) is passed straight through.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gpusort {

class GrpcAcceptGuard {
 public:
  using Clock = std::chrono::steady_clock;
  // Guards the TCP listener bound to `port` (every address family) until the guard goes. `name` names
  // the port in the log ("gRPC port").
  static std::shared_ptr<GrpcAcceptGuard> Guard(int port, std::string name, std::size_t max_connections);
  ~GrpcAcceptGuard();
  GrpcAcceptGuard(const GrpcAcceptGuard&) = delete;
  GrpcAcceptGuard& operator=(const GrpcAcceptGuard&) = delete;

  int port() const { return port_; }
  std::size_t max_connections() const { return max_connections_; }
  // Whether the last connection that came was taken (not refused for want of descriptors, memory, or
  // room under max_connections).
  bool accepting() const { return accepting_.load(); }
  // Connections taken, and refused, since the guard began.
  std::uint64_t accepted() const { return accepted_.load(); }
  std::uint64_t refused() const { return refused_.load(); }
  // The port's connections still open (counted now).
  std::size_t open_connections();

  // What accept4 does for this port; public only for the interposed accept4.
  int Accept(int listen_fd, void* address, void* address_length, int flags);

 private:
  GrpcAcceptGuard(int port, std::string name, std::size_t max_connections);
  // Takes `fd` as one of the port's connections; false when the port is full even after forgetting
  // the connections gRPC has closed.
  bool Take(int fd);
  // Closes the connections waiting in `listen_fd`'s queue without a descriptor to spare.
  void Shed(int listen_fd);
  void Refused(const char* why, int error);

  const int port_;
  const std::string name_;
  const std::size_t max_connections_;
  std::atomic<bool> accepting_{true};
  std::atomic<std::uint64_t> accepted_{0};
  std::atomic<std::uint64_t> refused_{0};
  std::mutex mutex_;
  // The port's connections: descriptor and socket inode. gRPC closes them without telling us; an entry
  // whose descriptor no longer names that socket is one gRPC closed.
  std::vector<std::pair<int, std::uint64_t>> open_;
  Clock::time_point last_log_{};
  std::uint64_t refused_since_log_ = 0;
};

}  // namespace gpusort
