// The calls connections of the shared-memory socket (sort.proto, "Calls on the shared-memory socket"):
// a connection whose first message is a call record carries calls from then on, one answered before the
// next is read. Each connection has a thread of its own that blocks on it and runs its calls itself, so
// that a call costs one wake-up of that thread and one of the caller: no HTTP/2, no hop to a worker. The
// engines' own limits (stream slots, --max-inflight tickets) bound how many run at once, as for gRPC
// calls on regions.
//
// One more thread watches every connection for its caller hanging up, and cancels the call in progress.
// A connection idle for `idle_timeout` is closed; calls that reach it meanwhile are answered UNAVAILABLE
// without running, so that the caller knows to send them again on a new connection.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <list>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/core/unique_fd.h"
#include "server/service/auth.h"
#include "server/transport/connection_threads.h"
#include "server/transport/shm_socket/region_call.h"
#include "server/transport/shm_socket/region_socket_io.h"
#include "server/service/service_core.h"

namespace gpusort {

struct RegionCallsOptions {
  std::size_t max_connections = 256;
  std::size_t max_connections_per_user = 64;
  std::chrono::milliseconds idle_timeout{60'000};
};

class RegionCalls {
 public:
  // `auth` (null: no tokens) must outlive this.
  RegionCalls(ServiceCore& core, const TokenAuth* auth, const RegionCallsOptions& options);
  // Cancels the calls in progress, wakes every connection's thread and joins them, then closes.
  ~RegionCalls();
  RegionCalls(const RegionCalls&) = delete;
  RegionCalls& operator=(const RegionCalls&) = delete;

  // Takes a connection whose first message, `first_call`, starts as a call record does: served on a
  // thread of its own from here, or refused (RESOURCE_EXHAUSTED, then closed) past the connection limits.
  void Adopt(UniqueFd fd, uid_t uid, pid_t pid, IncomingMessage first_call);

 private:
  // A connection being served; its thread (in threads_) removes it from connections_ as it ends.
  struct Connection {
    UniqueFd fd;
    uid_t uid = 0;
    pid_t pid = 0;
    std::uint64_t id = 0;  // the watcher's key
    CallWatch watch;
  };

  void Serve(std::list<Connection>::iterator c, IncomingMessage first_call);
  // Waits for the next message (nullopt: the connection ends: closed, failed, idle or stopping).
  std::optional<IncomingMessage> NextCall(Connection& c);
  // Sends a whole record, waiting while the caller's queue is full (false: the connection is of no more
  // use: failed, stopping, or the caller not reading for idle_timeout).
  bool Send(Connection& c, const std::vector<std::byte>& record);
  // Closes an idle connection: calls already queued on it are answered UNAVAILABLE.
  void CloseIdle(Connection& c);
  void Watch();

  ServiceCore& core_;
  const TokenAuth* auth_;
  const RegionCallsOptions options_;
  UniqueFd stop_fd_;   // an eventfd, written once to stop every thread
  UniqueFd epoll_fd_;  // the watcher's: every connection, for its hang-up
  std::mutex mutex_;
  std::list<Connection> connections_;  // the connections being served (their threads are threads_')
  std::map<uid_t, std::size_t> per_user_;
  std::uint64_t next_id_ = 1;
  std::thread watcher_;
  ConnectionThreads threads_{"gs-shm-call"};
};

}  // namespace gpusort
