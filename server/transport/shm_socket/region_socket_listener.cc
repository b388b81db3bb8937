#include "server/transport/shm_socket/region_socket_listener.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "gpusort/v1/region_calls.h"
#include "server/core/thread_name.h"
#include "server/transport/shm_socket/caller_descriptor.h"
#include "server/service/region_id.h"
#include "server/transport/shm_socket/region_registration.h"
#include "server/transport/shm_socket/region_socket_io.h"

namespace gpusort {
namespace {

constexpr int kListenBacklog = 128;
// How soon a user whose closes are behind is looked at again.
constexpr std::chrono::milliseconds kCloseRecheck = AcceptPause::kPause;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

absl::StatusOr<sockaddr_un> AddressOf(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError("--shm-socket must be a path of 1 to " +
                                      std::to_string(sizeof(address.sun_path) - 1) + " bytes");
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

// A socket file left behind by a server that stopped without removing it is removed; anything else at
// the path is left alone and refused.
absl::Status ClearStaleSocket(const std::string& path, const sockaddr_un& address) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::FailedPreconditionError(Errno("cannot inspect --shm-socket " + path));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError("--shm-socket " + path + " exists and is not a socket; not replacing it");
  }
  UniqueFd probe(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!probe.valid()) return absl::FailedPreconditionError(Errno("socket"));
  if (connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) {
    return absl::FailedPreconditionError("--shm-socket " + path + " is in use by another server");
  }
  if (errno != ECONNREFUSED) {
    return absl::FailedPreconditionError(Errno("--shm-socket " + path + " is a socket that cannot be probed"));
  }
  if (unlink(path.c_str()) != 0) return absl::FailedPreconditionError(Errno("cannot remove stale socket " + path));
  return absl::OkStatus();
}

}  // namespace

RegionSocketListener::RegionSocketListener(const RegionSocketOptions& options, SharedRegions& regions,
                                           RegionCalls* calls)
    : options_(options), regions_(regions), calls_(calls) {}

absl::StatusOr<std::unique_ptr<RegionSocketListener>> RegionSocketListener::Start(const RegionSocketOptions& options,
                                                                                  SharedRegions& regions,
                                                                                  RegionCalls* calls) {
  absl::StatusOr<sockaddr_un> address = AddressOf(options.path);
  if (!address.ok()) return address.status();
  if (absl::Status s = ClearStaleSocket(options.path, *address); !s.ok()) return s;
  std::unique_ptr<RegionSocketListener> listener(new RegionSocketListener(options, regions, calls));
  listener->listen_fd_ = UniqueFd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener->listen_fd_.valid()) return absl::UnavailableError(Errno("socket"));
  if (bind(listener->listen_fd_.get(), reinterpret_cast<const sockaddr*>(&*address), sizeof(*address)) != 0) {
    return absl::UnavailableError(Errno("cannot bind --shm-socket " + options.path));
  }
  struct stat st {};
  if (lstat(options.path.c_str(), &st) != 0) return absl::UnavailableError(Errno("cannot inspect " + options.path));
  listener->socket_dev_ = st.st_dev;
  listener->socket_ino_ = st.st_ino;
  // Anyone may connect: what a caller can register is decided by the descriptor it holds, not by who
  // may reach the socket (a directory's permissions can still narrow that down).
  if (chmod(options.path.c_str(), 0666) != 0 || listen(listener->listen_fd_.get(), kListenBacklog) != 0) {
    const absl::Status error = absl::UnavailableError(Errno("cannot listen on --shm-socket " + options.path));
    unlink(options.path.c_str());
    return error;
  }
  listener->wake_fd_ = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!listener->wake_fd_.valid()) {
    unlink(options.path.c_str());
    return absl::UnavailableError(Errno("eventfd"));
  }
  listener->thread_ = std::thread([l = listener.get()] { l->Run(); });
  spdlog::info("shared-memory registration socket {}", options.path);
  return listener;
}

RegionSocketListener::~RegionSocketListener() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    (void)!write(wake_fd_.get(), &one, sizeof(one));
    thread_.join();
  }
  for (Connection& c : connections_) Close(c);
  connections_.clear();
  // Removed only if the path is still this server's socket (not one a later server put there).
  struct stat st {};
  if (lstat(options_.path.c_str(), &st) == 0 && st.st_dev == socket_dev_ && st.st_ino == socket_ino_) {
    unlink(options_.path.c_str());
  }
}

std::size_t RegionSocketListener::pending() const {
  return static_cast<std::size_t>(std::count_if(connections_.begin(), connections_.end(),
                                                [](const Connection& c) { return c.region_id.empty() && !c.done; }));
}

void RegionSocketListener::Run() {
  NameThisThread("gs-shm-listen");
  std::vector<pollfd> fds;
  for (;;) {
    const Clock::time_point now = Clock::now();
    const bool accepting = accept_pause_.accepting(now);
    fds.clear();
    fds.push_back({wake_fd_.get(), POLLIN, 0});
    fds.push_back({accepting ? listen_fd_.get() : -1, POLLIN, 0});
    Clock::time_point wake_at = accepting ? Clock::time_point::max() : accept_pause_.until();
    for (const Connection& c : connections_) {
      // A user whose closes are behind is not read (poll skips a negative descriptor); looked at again
      // shortly, as its closing thread catches up.
      const bool waits = UserWaitsForItsCloses(c.uid);
      fds.push_back({waits ? -1 : c.fd.get(), POLLIN, 0});
      if (waits) wake_at = std::min(wake_at, now + kCloseRecheck);
      if (c.region_id.empty()) wake_at = std::min(wake_at, c.deadline);
    }
    int timeout_ms = -1;
    if (wake_at != Clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake_at - now).count();
      timeout_ms = static_cast<int>(std::clamp<long long>(left, 0, 60'000));
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("shared-memory socket: {}", Errno("poll"));
      return;
    }
    if (fds[0].revents != 0) return;  // stopping
    // Requests that arrived are served before deadlines are judged: a busy listener (pinning a large
    // region) must not time out a caller that was in time.
    for (std::size_t i = 0; i < connections_.size(); ++i) {
      // Judged again before each read: a message read just now may have put its user past its share,
      // and one user's many connections must not each bring a message in the same round.
      if (fds[i + 2].revents != 0 && !UserWaitsForItsCloses(connections_[i].uid)) {
        Serve(connections_[i], fds[i + 2].revents);
      }
    }
    const Clock::time_point after = Clock::now();
    for (Connection& c : connections_) {
      if (!c.done && c.region_id.empty() && after >= c.deadline) {
        spdlog::info("shared-memory socket: user {} (pid {}) sent no registration within {} ms; closed", c.uid,
                     c.pid, options_.registration_timeout.count());
        Close(c);
      }
    }
    std::erase_if(connections_, [](const Connection& c) { return c.done; });
    if (fds[1].revents != 0) AcceptAll();
  }
}

void RegionSocketListener::AcceptAll() {
  for (;;) {
    // The last resort, for when the closer process cannot take refused connections (closer_process.h):
    // past the whole share and one message more, accepting (which costs a descriptor) pauses.
    if (DescriptorsClosingAside() >= options_.max_closing_aside + kMaxPassedDescriptors) {
      accept_pause_.Pause(std::to_string(DescriptorsClosingAside()) +
                     " descriptors that callers handed over are still being closed");
      return;
    }
    UniqueFd fd(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) accept_pause_.Pause(Errno("accept"));
      return;  // EAGAIN: all taken
    }
    ucred peer{};
    socklen_t length = sizeof(peer);
    if (getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) {
      spdlog::warn("shared-memory socket: {}", Errno("SO_PEERCRED"));
      // A socket the kernel gave no peer to has carried nothing: closing it releases nothing of a caller's.
      continue;
    }
    std::string refusal;
    if (pending() >= options_.max_pending) {
      refusal = "the server already has " + std::to_string(options_.max_pending) +
                " connections waiting to register (--shm-max-pending); try again";
    } else if (UserWaitsForItsCloses(peer.uid)) {
      refusal = "user " + std::to_string(peer.uid) + " has " + std::to_string(DescriptorsClosingAside(peer.uid)) +
                " descriptors it handed over still being closed (a close that blocks: a lingering socket, a "
                "FUSE file); try again once they are";
    }
    if (!refusal.empty()) {
      SendReply(fd.get(), absl::StatusCode::kResourceExhausted, refusal);
      // In the closer process (or on the user's closing thread), which first reads what the caller sent
      // already (closing any descriptor in it): a socket closed with unread data resets the caller's end
      // instead of letting it read the answer first, and the descriptors in it would be released on this
      // thread.
      CloseConnectionAside(peer.uid, std::move(fd));
      continue;
    }
    Connection c;
    c.fd = std::move(fd);
    c.uid = peer.uid;
    c.pid = peer.pid;
    c.deadline = Clock::now() + options_.registration_timeout;
    connections_.push_back(std::move(c));
  }
}

bool RegionSocketListener::UserWaitsForItsCloses(uid_t uid) const {
  // An eighth of the share, but at least 16: one close that blocks parks two descriptors (the one
  // handed over and the connection it came on) and must not refuse its user's next registration.
  const std::size_t users_share =
      std::min(options_.max_closing_aside, std::max<std::size_t>(16, options_.max_closing_aside / 8));
  const std::size_t users = DescriptorsClosingAside(uid);
  // Once all users together hold the whole share, every user with anything waiting waits; a user with
  // nothing waiting is still served (issue 41's third attack session: pausing for everyone let one
  // user's message of 253 stop every other user's registrations).
  return users >= users_share || (users > 0 && DescriptorsClosingAside() >= options_.max_closing_aside);
}

void RegionSocketListener::Serve(Connection& c, short revents) {
  if (c.done) return;
  // Read as long as a call record may be: a shorter registration is judged by its own size.
  absl::StatusOr<std::optional<IncomingMessage>> received =
      ReceiveMessage(c.fd.get(), c.uid,
                     c.region_id.empty() ? v1::region_calls::kMaxCallBytes : v1::region_socket::kRequestBytes);
  if (!received.ok() || (!received->has_value() && (revents & (POLLERR | POLLHUP | POLLNVAL)) != 0)) {
    Close(c);  // the socket failed: of no more use
    return;
  }
  if (!received->has_value()) return;  // woken for nothing
  const IncomingMessage& message = **received;
  if (message.closed) {
    Close(c);  // the caller's end: unregisters its region
    return;
  }
  if (!c.region_id.empty()) {
    // One registration per connection; anything more breaks the protocol, and the region goes with it.
    spdlog::info("shared-memory socket: user {} (pid {}) sent more after registering; closed, region {} unregistered",
                 c.uid, c.pid, RegionIdForLog(c.region_id));
    Close(c);
    return;
  }
  if (v1::region_calls::LooksLikeCall(message.bytes) && calls_ != nullptr) {
    calls_->Adopt(std::move(c.fd), c.uid, c.pid, std::move(**received));
    c.done = true;  // RegionCalls' from here
    return;
  }
  const RegionOwner owner{.uid = c.uid,
                          .max_regions = options_.max_regions_per_user,
                          .max_bytes = options_.max_bytes_per_user};
  absl::StatusOr<std::string> id = RegisterFromMessage(message, owner, regions_);
  if (!id.ok()) {
    spdlog::info("shared-memory registration by user {} (pid {}) refused: {}", c.uid, c.pid,
                 std::string(id.status().message()));
    SendReply(c.fd.get(), id.status().code(), std::string(id.status().message()));
    Close(c);
    return;
  }
  c.region_id = *id;
  SendReply(c.fd.get(), absl::StatusCode::kOk, c.region_id);
}

void RegionSocketListener::Close(Connection& c) {
  if (c.done) return;
  c.done = true;
  if (!c.region_id.empty()) regions_.Unregister(c.region_id);
  CloseConnectionAside(c.uid, std::move(c.fd));  // what it still holds may block its close
}

RegionCallsOptions RegionCallsOptionsFrom(const ServerConfig& config) {
  return {.max_connections = config.shm_max_call_connections,
          .max_connections_per_user = config.shm_max_call_connections_per_user,
          .idle_timeout = std::chrono::milliseconds(
              static_cast<long long>(std::ceil(config.shm_call_idle_timeout_seconds * 1000)))};
}

absl::StatusOr<std::unique_ptr<RegionSocketListener>> StartRegionSocket(const ServerConfig& config,
                                                                        SharedRegions& regions, RegionCalls* calls) {
  if (config.shm_socket.empty()) return nullptr;
  if (config.shm_max_regions == 0) {
    return absl::InvalidArgumentError("--shm-socket turns shared memory on and --shm-max-regions 0 turns it off");
  }
  return RegionSocketListener::Start(
      {.path = config.shm_socket,
       .max_pending = config.shm_max_pending,
       .registration_timeout = std::chrono::milliseconds(
           static_cast<long long>(std::ceil(config.shm_registration_timeout_seconds * 1000))),
       .max_regions_per_user = config.shm_max_regions_per_user,
       .max_bytes_per_user = config.shm_max_bytes_per_user,
       .max_closing_aside = config.shm_max_closing_aside},
      regions, calls);
}

}  // namespace gpusort
