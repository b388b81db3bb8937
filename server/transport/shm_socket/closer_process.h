// The closer process (issue 41): a child of the server that closes sockets callers handed over, and
// callers' connections to the shared-memory socket, out of the server's descriptor table.
//
// The last close of a caller's socket may block (SO_LINGER with a peer that reads nothing), and so may
// the close of a connection whose unread messages carry such sockets: the kernel releases them on the
// closing thread. Closing them on a thread of the server's per user (closing_threads.h) keeps a blocked
// close from holding up anyone else, but what waits behind it stays in the server's table; a user who is
// refused still has to be accepted first (only then is it known who it is), and every refused
// connection that carried descriptors then waited too, until the closing share was full and nobody
// could register (issue 41's third attack session). A socket handed to this process costs the server
// nothing once it is handed: whatever its close does, it does here.
//
// Handing over is safe because a socket has no flush: the server's close of its own copy, once the
// closer process holds another, releases nothing. The closer process closes an item only after the
// server says it has closed its copy (an acknowledgement after each item), so the server's copy is never
// the last one. Files (a FUSE file's close calls its flush on whoever closes it) stay on the server's
// closing threads.
#pragma once

#include <sys/types.h>

#include "absl/status/status.h"
#include "server/core/unique_fd.h"

namespace gpusort {

// Forks the closer process. Call before any thread starts: the child carries on with what fork copied.
// It raises its descriptor limit to the hard limit, ignores SIGINT and SIGTERM, and ends when the server
// does (its socket's end, or PR_SET_PDEATHSIG).
absl::Status StartCloserProcess();

// Hands `fd`, a socket user `owner` handed over (or its connection, which is read out before it is
// closed: `connection`), to the closer process and closes the server's copy; true when it took it. False
// (and `fd` untouched) when there is no closer process or it cannot take more now (its socket's queue is
// full, the kernel's limit on descriptors in flight): the caller closes it another way.
bool HandToCloserProcess(uid_t owner, UniqueFd& fd, bool connection);

// Ends the closer process and waits for it (tests); its exit closes what it held.
void StopCloserProcess();

// Whether a closer process is running, and its process id (-1: none). A closer process found gone (a
// hand-over fails because its end of the socket closed) is said once in the log and not used again.
bool CloserProcessRunning();
pid_t CloserProcessId();

}  // namespace gpusort
