#include "client/src/region_call_connections.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "client/src/shm_socket_connect.h"
#include "gpusort/v1/region_calls.h"
#include "gpusort/v1/region_socket.h"

namespace gpusort::client_internal {
namespace {

namespace wire = v1::region_calls;

// Past the call's own deadline, how long the answer may take to arrive: the server answers
// DEADLINE_EXCEEDED itself, at its next check between stages.
constexpr std::chrono::milliseconds kDeadlineGrace{5000};

absl::Status Errno(const std::string& what) {
  return absl::UnavailableError("shared-memory socket: " + what + ": " + std::strerror(errno));
}

}  // namespace

// After the server refused a new calls connection, how long calls past the connections it took go over
// gRPC before a new one is tried again.
constexpr std::chrono::seconds kAfterRefusal{1};

RegionCallConnections::~RegionCallConnections() {
  for (int fd : kept_) close(fd);
}

absl::StatusOr<std::optional<RegionCallConnections::Taken>> RegionCallConnections::Take() {
  {
    std::lock_guard lock(mutex_);
    if (!kept_.empty()) {
      const int fd = kept_.back();
      kept_.pop_back();
      return Taken{fd, true};
    }
    if (open_ >= cap_ && std::chrono::steady_clock::now() < ask_again_) return std::nullopt;
    ++open_;  // counted before the connect, so that callers racing here see it
  }
  absl::StatusOr<int> fd = ConnectToShmSocket(path_);
  if (!fd.ok()) {
    Close(-1);  // gives back the count taken above
    return fd.status();
  }
  return Taken{*fd, false};
}

void RegionCallConnections::Give(int fd) {
  std::lock_guard lock(mutex_);
  kept_.push_back(fd);
}

void RegionCallConnections::Close(int fd) {
  if (fd >= 0) close(fd);
  std::lock_guard lock(mutex_);
  --open_;
}

void RegionCallConnections::Refused(int fd) {
  close(fd);
  std::lock_guard lock(mutex_);
  --open_;
  cap_ = open_;
  ask_again_ = std::chrono::steady_clock::now() + kAfterRefusal;
}

absl::StatusOr<std::vector<std::byte>> RegionCallConnections::Receive(int fd, std::chrono::milliseconds timeout) const {
  std::vector<std::byte> buffer(std::max(wire::kMaxAnswerBytes, v1::region_socket::kReplyBytes));
  const auto start = std::chrono::steady_clock::now();
  const auto spin_until = start + wait_spin_;
  const bool bounded = timeout.count() > 0;
  const auto give_up = start + timeout + kDeadlineGrace;
  for (;;) {
    const bool spinning = std::chrono::steady_clock::now() < spin_until;
    const ssize_t n = recv(fd, buffer.data(), buffer.size(), spinning ? MSG_DONTWAIT : 0);
    if (n > 0) {
      buffer.resize(static_cast<std::size_t>(n));
      return buffer;
    }
    if (n == 0) return absl::UnavailableError("the server closed its shared-memory socket connection before answering");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return Errno("reading the answer");
    if (spinning) {
      std::this_thread::yield();
      continue;
    }
    // Blocking from here, bounded by the deadline when there is one.
    int wait_ms = -1;
    if (bounded) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
      if (left.count() <= 0) return absl::DeadlineExceededError("no answer from the server within the call's deadline");
      wait_ms = static_cast<int>(left.count());
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, wait_ms) == 0) return absl::DeadlineExceededError("no answer from the server within the call's deadline");
  }
}

absl::StatusOr<std::optional<std::string>> RegionCallConnections::Send(const Call& call) {
  if (unsupported_.load(std::memory_order_relaxed)) return std::nullopt;
  const std::vector<std::byte> record = wire::EncodeCall(
      {.method = call.method,
       .timeout_ms = static_cast<std::uint32_t>(std::min<long long>(call.timeout.count(), UINT32_MAX)),
       .token = std::string(call.token),
       .request_id = std::string(call.request_id),
       .request = call.request});
  // A kept connection the server closed meanwhile (idle) is found when the call is sent or answered
  // "closed, not run"; the call then goes once more, on a new connection.
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::StatusOr<std::optional<Taken>> taken = Take();
    if (!taken.ok()) return taken.status();
    if (!taken->has_value()) return std::nullopt;  // the server's limits: gRPC takes the call
    const int fd = (*taken)->fd;
    const bool reused = (*taken)->reused;
    if (send(fd, record.data(), record.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(record.size())) {
      const absl::Status error = Errno("sending the call");
      Close(fd);
      if (reused) continue;
      return error;
    }
    absl::StatusOr<std::vector<std::byte>> bytes = Receive(fd, call.timeout);
    if (!bytes.ok()) {
      Close(fd);  // its answer may still come: the connection cannot carry another call
      return bytes.status();
    }
    std::optional<wire::Answer> answer = wire::DecodeAnswer(*bytes);
    if (!answer.has_value()) {
      Close(fd);
      if (v1::region_socket::DecodeReply(*bytes).has_value()) {  // a server that only registers regions
        unsupported_.store(true, std::memory_order_relaxed);
        return std::nullopt;
      }
      return absl::InternalError("the server's answer on its shared-memory socket is not an answer record");
    }
    if ((answer->flags & wire::kFlagClosedNotRun) != 0) {
      if (reused) {  // closed while idle: once more on a new connection
        Close(fd);
        continue;
      }
      Refused(fd);  // a new connection refused: gRPC takes the call
      return std::nullopt;
    }
    Give(fd);
    if (answer->code != 0) return absl::Status(static_cast<absl::StatusCode>(answer->code), answer->message);
    return std::optional<std::string>(std::move(answer->response));
  }
  return absl::UnavailableError("the server closed two shared-memory socket connections in a row before a call");
}

}  // namespace gpusort::client_internal
