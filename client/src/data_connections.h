// The client's TCP connections to a server's data port (sort.proto, "Sockets beside gRPC"): opened on
// first use and kept, like gRPC's own, for the parts of later calls. Private to the client library.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpusort::client_internal {

class DataConnections {
 public:
  // `host`: where the data port is (the gRPC target's host).
  explicit DataConnections(std::string host) : host_(std::move(host)) {}
  ~DataConnections();
  DataConnections(const DataConnections&) = delete;
  DataConnections& operator=(const DataConnections&) = delete;

  // `count` connected sockets to `port`, kept ones first. UNAVAILABLE when one cannot be opened.
  absl::StatusOr<std::vector<int>> Take(std::size_t count, int port);
  // Connections whose part was answered in full, for later calls; each other one is closed by its taker.
  void Give(std::vector<int> fds, int port);

 private:
  absl::StatusOr<int> Connect(int port) const;

  const std::string host_;
  std::mutex mutex_;
  int port_ = 0;  // of the kept connections
  std::vector<int> kept_;
};

// The host of the gRPC target (its authority where it has one): "localhost:50051" -> "localhost",
// "dns:///name:5" -> "name", "ipv4:10.0.0.1:5" -> "10.0.0.1", "[::1]:5" -> "::1"; loopback for a Unix
// socket's.
std::string DataHostOf(const std::string& target_uri, const std::string& authority);

}  // namespace gpusort::client_internal
