#include "server/transport/shm_socket/region_calls.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "gpusort/v1/region_calls.h"
#include "server/core/thread_name.h"

namespace gpusort {
namespace {

namespace wire = v1::region_calls;

std::vector<std::byte> Refusal(absl::StatusCode code, const std::string& message, std::uint16_t flags = 0) {
  return wire::EncodeAnswer(static_cast<std::uint32_t>(code), message, {}, flags);
}

// One whole record, or nothing: a SOCK_SEQPACKET send never splits it.
enum class SendResult { kSent, kFull, kFailed };
SendResult TrySend(int fd, const std::vector<std::byte>& record) {
  ssize_t n;
  do {
    n = send(fd, record.data(), record.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n >= 0) return SendResult::kSent;
  return errno == EAGAIN || errno == EWOULDBLOCK ? SendResult::kFull : SendResult::kFailed;
}

}  // namespace

RegionCalls::RegionCalls(ServiceCore& core, const TokenAuth* auth, const RegionCallsOptions& options)
    : core_(core),
      auth_(auth),
      options_(options),
      stop_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      epoll_fd_(epoll_create1(EPOLL_CLOEXEC)) {
  if (stop_fd_.valid() && epoll_fd_.valid()) {
    epoll_event stop{.events = EPOLLIN, .data = {.u64 = 0}};
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, stop_fd_.get(), &stop);
    watcher_ = std::thread([this] { Watch(); });
  } else {
    spdlog::error("shared-memory calls: cannot make the watcher's descriptors ({}); calls are refused",
                  std::strerror(errno));
  }
}

RegionCalls::~RegionCalls() {
  {
    std::lock_guard lock(mutex_);
    for (Connection& c : connections_) c.watch.CallerGone();  // the calls in progress stop at their next check
  }
  if (stop_fd_.valid()) {
    const std::uint64_t one = 1;
    (void)!write(stop_fd_.get(), &one, sizeof(one));
  }
  if (watcher_.joinable()) watcher_.join();
  // No thread adds a connection now (the listener, the only caller of Adopt, stopped first).
  threads_.JoinAll();
}

void RegionCalls::Adopt(UniqueFd fd, uid_t uid, pid_t pid, IncomingMessage first_call) {
  std::lock_guard lock(mutex_);
  std::string refusal;
  if (!watcher_.joinable()) {
    refusal = "the server cannot serve calls on its shared-memory socket (see its log); use gRPC";
  } else if (connections_.size() >= options_.max_connections) {
    refusal = "the server already serves " + std::to_string(options_.max_connections) +
              " calls connections on its shared-memory socket (--shm-max-call-connections); close one or use gRPC";
  } else if (per_user_[uid] >= options_.max_connections_per_user) {
    refusal = "user " + std::to_string(uid) + " already holds " + std::to_string(options_.max_connections_per_user) +
              " calls connections (--shm-max-call-connections-per-user); close one or use gRPC";
  }
  if (!refusal.empty()) {
    spdlog::info("shared-memory calls: connection of user {} (pid {}) refused: {}", uid, pid, refusal);
    (void)TrySend(fd.get(), Refusal(absl::StatusCode::kResourceExhausted, refusal, wire::kFlagClosedNotRun));
    CloseConnectionAside(uid, std::move(fd));  // what it still holds may block its close
    return;
  }
  const auto it = connections_.emplace(connections_.end());
  Connection& c = *it;
  c.fd = std::move(fd);
  c.uid = uid;
  c.pid = pid;
  c.id = next_id_++;
  ++per_user_[uid];
  // Hang-ups only (no EPOLLIN: the calls are the connection thread's to read), edge-triggered: one event.
  epoll_event watch{.events = EPOLLRDHUP | EPOLLET, .data = {.u64 = c.id}};
  epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, c.fd.get(), &watch);
  threads_.Start([this, it, first = std::move(first_call)]() mutable { Serve(it, std::move(first)); });
}

void RegionCalls::Serve(std::list<Connection>::iterator it, IncomingMessage message) {
  Connection& c = *it;
  for (;;) {
    RegionCallAnswer answer;
    if (message.truncated || !message.fds.empty() || message.fds_truncated) {
      answer = {.record = Refusal(absl::StatusCode::kInvalidArgument,
                                  "a call record is at most " + std::to_string(wire::kMaxCallBytes) +
                                      " bytes and carries no descriptor; the connection is closed"),
                .keep_open = false};
    } else {
      answer = AnswerRegionCall(core_, auth_, c.uid, message.bytes, c.watch);
    }
    if (!Send(c, answer.record) || !answer.keep_open) break;
    std::optional<IncomingMessage> next = NextCall(c);
    if (!next.has_value()) break;
    message = *std::move(next);
  }
  std::lock_guard lock(mutex_);
  epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
  // Not closed here, under the lock every connection takes: what it still holds may block its close.
  CloseConnectionAside(c.uid, std::move(c.fd));
  if (--per_user_[c.uid] == 0) per_user_.erase(c.uid);
  connections_.erase(it);
}

bool RegionCalls::Send(Connection& c, const std::vector<std::byte>& record) {
  for (;;) {
    switch (TrySend(c.fd.get(), record)) {
      case SendResult::kSent: return true;
      case SendResult::kFailed: return false;
      case SendResult::kFull: break;
    }
    pollfd fds[2] = {{c.fd.get(), POLLOUT, 0}, {stop_fd_.get(), POLLIN, 0}};
    const int ready = poll(fds, 2, static_cast<int>(options_.idle_timeout.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 || fds[1].revents != 0 || (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return false;
  }
}

std::optional<IncomingMessage> RegionCalls::NextCall(Connection& c) {
  for (;;) {
    pollfd fds[2] = {{c.fd.get(), POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
    const int ready = poll(fds, 2, static_cast<int>(options_.idle_timeout.count()));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (fds[1].revents != 0) return std::nullopt;  // stopping
    if (ready == 0) {
      CloseIdle(c);
      return std::nullopt;
    }
    absl::StatusOr<std::optional<IncomingMessage>> received = ReceiveMessage(c.fd.get(), c.uid, wire::kMaxCallBytes);
    if (!received.ok()) return std::nullopt;
    if (!received->has_value()) {
      if ((fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return std::nullopt;
      continue;  // woken for nothing
    }
    if ((*received)->closed) return std::nullopt;
    return *std::move(*received);
  }
}

void RegionCalls::CloseIdle(Connection& c) {
  // From here the caller's sends fail (EPIPE): what it sends next goes on a new connection. What it sent
  // before is answered, not run, so that it knows to send that again too.
  shutdown(c.fd.get(), SHUT_RD);
  const std::string why = "the calls connection was idle for " + std::to_string(options_.idle_timeout.count()) +
                          " ms and is closed; this call did not run: send it again on a new connection";
  for (;;) {
    absl::StatusOr<std::optional<IncomingMessage>> queued = ReceiveMessage(c.fd.get(), c.uid, wire::kMaxCallBytes);
    if (!queued.ok() || !queued->has_value() || (*queued)->closed) return;
    (void)TrySend(c.fd.get(), Refusal(absl::StatusCode::kUnavailable, why, wire::kFlagClosedNotRun));
  }
}

void RegionCalls::Watch() {
  NameThisThread("gs-shm-watch");
  epoll_event events[32];
  for (;;) {
    const int n = epoll_wait(epoll_fd_.get(), events, 32, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::error("shared-memory calls: epoll_wait: {}", std::strerror(errno));
      return;
    }
    std::lock_guard lock(mutex_);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == 0) return;  // the stop eventfd
      for (Connection& c : connections_) {
        if (c.id == events[i].data.u64) c.watch.CallerGone();
      }
    }
  }
}

}  // namespace gpusort
