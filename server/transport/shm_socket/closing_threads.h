// Closes descriptors that callers handed over on a thread per user (issue 41): the last close of a
// caller's descriptor may block for as long as its owner likes (a FUSE file's flush, a TCP socket with
// SO_LINGER and a peer that reads nothing), so a close that blocks holds up only its own user's later
// closes. What waits is counted, all users' and each one's, so that whoever hands descriptors over can
// stop taking them from a user who is past its share.
//
// Both the server (caller_descriptor.cc) and its closer process (closer_process.h) keep one.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <deque>
#include <map>
#include <mutex>

#include "server/core/unique_fd.h"

namespace gpusort {

class ClosingThreads {
 public:
  // Closes `fd` on `owner`'s thread, started now if the user has none. A `connection` (a Unix socket a
  // caller wrote to) is first shut for reading and read out, and each descriptor still queued in it
  // closed there: closing it whole would make the kernel release them on the closing thread anyway, and
  // the caller reads the reply sent just before rather than a reset.
  void Add(uid_t owner, UniqueFd fd, bool connection);
  // Descriptors added and not yet closed: all users', and one's.
  std::size_t held();
  std::size_t held(uid_t owner);

 private:
  struct Item {
    UniqueFd fd;
    bool connection = false;
  };
  struct User {
    std::deque<Item> queue;
    std::size_t held = 0;  // queued, and the one being closed
    bool running = false;
  };
  // The user's thread: closes what it is given until its queue is empty, then ends. Never joined: a close
  // it is blocked in must not hold anyone's shutdown, which is why a ClosingThreads is never destroyed.
  void Run(uid_t owner);

  std::mutex mutex_;
  std::map<uid_t, User> users_;  // a std::map: an entry stays where it is while others come and go
  std::size_t held_ = 0;
};

}  // namespace gpusort
