// The client's calls on the server's shared-memory socket (sort.proto, "Calls on the shared-memory
// socket"): a Sort or TopK on registered regions sent as one record on a Unix socket instead of a gRPC
// call, which saves the HTTP/2 round trip and the server's hop to a worker (docs/benchmarks-log.md, issue 18).
// The connections are opened on first use and kept, one call at a time each. Private to the library.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpusort::client_internal {

class RegionCallConnections {
 public:
  RegionCallConnections(std::string socket_path, std::chrono::microseconds wait_spin)
      : path_(std::move(socket_path)), wait_spin_(wait_spin) {}
  ~RegionCallConnections();
  RegionCallConnections(const RegionCallConnections&) = delete;
  RegionCallConnections& operator=(const RegionCallConnections&) = delete;

  struct Call {
    std::uint16_t method = 1;  // region_calls::Method
    std::string_view token;
    std::string_view request_id;
    std::chrono::milliseconds timeout{0};
    std::string request;  // serialized
  };
  // The serialized response, or the server's status for the call. nullopt when the call should go over
  // gRPC instead: the server does not take calls on its socket (an older server), or refused a new
  // calls connection (its connection limits). The call did not run then.
  absl::StatusOr<std::optional<std::string>> Send(const Call& call);

 private:
  struct Taken {
    int fd = -1;
    bool reused = false;
  };
  // A kept connection, or a new one; nullopt when the server refused the last new one (its connection
  // limits) and this many are open already: the call then goes over gRPC without asking again, for a
  // second, instead of paying a refused connection per call.
  absl::StatusOr<std::optional<Taken>> Take();
  void Give(int fd);
  void Close(int fd);  // a connection of no more use
  void Refused(int fd);  // closed by the server's limits
  // Waits for the answer on `fd`: polls for wait_spin_, then blocks; the call's timeout (plus a grace
  // for the server's own DEADLINE_EXCEEDED to arrive) bounds the wait.
  absl::StatusOr<std::vector<std::byte>> Receive(int fd, std::chrono::milliseconds timeout) const;

  const std::string path_;
  const std::chrono::microseconds wait_spin_;
  std::atomic<bool> unsupported_{false};  // the server answered a call as a registration: an older server
  std::mutex mutex_;
  std::vector<int> kept_;
  std::size_t open_ = 0;                           // kept and in use
  std::size_t cap_ = SIZE_MAX;                     // open connections the server took at its last refusal
  std::chrono::steady_clock::time_point ask_again_;  // after a refusal: new connections from then on
};

}  // namespace gpusort::client_internal
