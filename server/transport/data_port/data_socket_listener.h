// The data port (--data-port; sort.proto, "Sockets beside gRPC"): a TCP listener whose connections
// carry the keys of SortOnSockets calls. One thread accepts, and fails the jobs that stalled; each
// connection is served on a thread of its own (data_connection.h), at most `max_connections` at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/unique_fd.h"
#include "server/service/config.h"
#include "server/transport/accept_pause.h"
#include "server/transport/connection_threads.h"
#include "server/transport/data_port/data_connection.h"
#include "server/transport/data_port/socket_sorts.h"

namespace gpusort {

struct DataPortOptions {
  std::string host = "0.0.0.0";  // the address to listen on (the gRPC listener's host)
  int port = 0;                  // 0: a free port, which port() then says
  std::size_t max_connections = 256;
  DataConnectionLimits limits;
};

class DataSocketListener {
 public:
  static absl::StatusOr<std::unique_ptr<DataSocketListener>> Start(const DataPortOptions& options, SocketSorts& sorts);
  // Stops accepting, wakes and joins every connection's thread (their parts fail with UNAVAILABLE).
  ~DataSocketListener();
  DataSocketListener(const DataSocketListener&) = delete;
  DataSocketListener& operator=(const DataSocketListener&) = delete;

  int port() const { return port_; }

 private:
  DataSocketListener(const DataPortOptions& options, SocketSorts& sorts) : options_(options), sorts_(sorts) {}
  void Run();
  void Accept();
  // Connections refused for the limit linger here (LingerAfterRefusal's reason) until their peer closes
  // or kRefusedLinger passes, dropping what they send; the accepting thread polls them.
  void Refuse(UniqueFd fd);
  void ServeRefused(const std::vector<short>& revents);

  const DataPortOptions options_;
  SocketSorts& sorts_;
  UniqueFd listen_fd_;
  UniqueFd wake_fd_;  // an eventfd: written to stop the accepting thread
  int port_ = 0;
  std::atomic<bool> stop_{false};
  struct Refused {
    UniqueFd fd;
    std::chrono::steady_clock::time_point close_at;
  };
  std::vector<Refused> refused_;  // the accepting thread's alone
  AcceptPause accept_pause_{"data port"};  // so is this
  ConnectionThreads connections_{"gs-data-conn"};  // each sees stop_ within its 100 ms poll slice
  std::thread thread_;
};

// The listener the server's flags ask for: nullptr without --data-port; INVALID_ARGUMENT with TLS on the
// gRPC port (the data connections would carry the keys in clear); UNAVAILABLE when it cannot listen.
absl::StatusOr<std::unique_ptr<DataSocketListener>> StartDataPort(const ServerConfig& config, SocketSorts& sorts);

}  // namespace gpusort
