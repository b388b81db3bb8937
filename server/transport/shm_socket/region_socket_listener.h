// The shared-memory registration socket (--shm-socket; sort.proto, "Shared memory"): a Unix-domain
// SOCK_SEQPACKET socket on which a caller hands the server a descriptor of its memory. The descriptor is
// the authority (the kernel checked the caller's rights when the caller opened or created the memory),
// SO_PEERCRED the identity (whose share of the limits it counts against). One registration per
// connection; the region stays registered while the connection stays open.
//
// One thread serves it with poll(): the listening socket, the connections that have not yet sent their
// request (at most `max_pending`, each for at most `registration_timeout`), and the registered ones,
// whose end unregisters their region. A connection whose first message is a call record goes to
// RegionCalls (region_calls.h), which serves its calls from then on.
//
// The thread never closes what a caller handed over, nor a caller's connection: the closer process
// (sockets, connections) or each user's closing thread (files) does (caller_descriptor.h). While a user
// has more than its share of descriptors waiting on its thread (a close that blocks, and more behind
// it), or anything at all while all users together have more than `max_closing_aside`, none of its
// connections is read and its new ones are refused; users with nothing waiting are served as ever.
#pragma once

#include <sys/types.h>

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
#include "server/transport/shm_socket/region_calls.h"
#include "server/service/shared_regions.h"

namespace gpusort {

struct RegionSocketOptions {
  std::string path;
  std::size_t max_pending = 64;                          // connections that have not registered yet
  std::chrono::milliseconds registration_timeout{5000};  // for a connection to send its request
  std::size_t max_regions_per_user = 16;
  std::size_t max_bytes_per_user = std::size_t{4} << 30;
  // Descriptors waiting to be closed on the users' closing threads: past an eighth of it (at least 16),
  // the user's connections wait; past all of it, those of every user with any waiting; past all of it and
  // one message more (only without a closer process to take refused connections), accepting pauses.
  std::size_t max_closing_aside = 512;
};

class RegionSocketListener {
 public:
  // Creates the socket at options.path (mode 0666: whoever can reach it may register memory it holds
  // itself) and starts serving it. A socket file left there by a server that is gone is replaced;
  // FAILED_PRECONDITION when the path is anything else, or a socket some process still listens on.
  // `calls` (null: calls connections are refused) must outlive this.
  static absl::StatusOr<std::unique_ptr<RegionSocketListener>> Start(const RegionSocketOptions& options,
                                                                     SharedRegions& regions,
                                                                     RegionCalls* calls = nullptr);
  // Stops the thread, closes every connection (unregistering its region: requests using one keep it
  // mapped until they finish) and removes the socket file.
  ~RegionSocketListener();
  RegionSocketListener(const RegionSocketListener&) = delete;
  RegionSocketListener& operator=(const RegionSocketListener&) = delete;

 private:
  using Clock = std::chrono::steady_clock;
  struct Connection {
    UniqueFd fd;
    uid_t uid = 0;
    pid_t pid = 0;
    Clock::time_point deadline;  // to send the request, while region_id is empty
    std::string region_id;       // set once registered
    bool done = false;           // to be closed
  };

  RegionSocketListener(const RegionSocketOptions& options, SharedRegions& regions, RegionCalls* calls);
  void Run();
  void AcceptAll();
  // The connection had an event: its request, its end, or bytes it must not send.
  void Serve(Connection& c, short revents);
  void Close(Connection& c);
  std::size_t pending() const;
  // The user has more descriptors waiting on its closing thread than its share: leave its connections.
  bool UserWaitsForItsCloses(uid_t uid) const;
  // Out of descriptors, or too many waiting to be closed: no accept for a while, said at most once a second.

  const RegionSocketOptions options_;
  SharedRegions& regions_;
  RegionCalls* calls_;
  UniqueFd listen_fd_;
  UniqueFd wake_fd_;  // an eventfd: written to stop the thread
  dev_t socket_dev_ = 0;
  ino_t socket_ino_ = 0;
  AcceptPause accept_pause_{"shared-memory socket"};  // out of descriptors: accept again a little later
  std::vector<Connection> connections_;    // the thread's alone
  std::thread thread_;
};

// The listener the server's flags ask for: nullptr without --shm-socket (shared memory off);
// INVALID_ARGUMENT for --shm-socket with --shm-max-regions 0, which contradict each other.
absl::StatusOr<std::unique_ptr<RegionSocketListener>> StartRegionSocket(const ServerConfig& config,
                                                                        SharedRegions& regions, RegionCalls* calls);

// What the server's flags ask of the calls connections.
RegionCallsOptions RegionCallsOptionsFrom(const ServerConfig& config);

}  // namespace gpusort
