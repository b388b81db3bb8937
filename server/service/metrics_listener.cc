#include "server/service/metrics_listener.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <spdlog/spdlog.h>

#include "server/core/thread_name.h"
#include "server/transport/tcp_listen.h"

namespace gpusort {
namespace {

constexpr int kListenBacklog = 128;
constexpr std::size_t kMaxHeadBytes = 8192;
// After the answer is sent, what the scraper still sends is read (and dropped) for at most this long
// before the close: closing with unread bytes resets the connection, which can lose the answer's end.
constexpr std::chrono::milliseconds kCloseLinger{1000};

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsListener>> MetricsListener::Start(const MetricsListenerOptions& options,
                                                                        std::function<std::string()> collect) {
  absl::StatusOr<std::pair<std::string, int>> address = SplitHostPort(options.listen);
  if (!address.ok()) {
    return absl::InvalidArgumentError("--metrics-listen " + options.listen + ": " +
                                      std::string(address.status().message()));
  }
  std::unique_ptr<MetricsListener> listener(new MetricsListener(options, std::move(collect)));
  absl::StatusOr<TcpListener> tcp = ListenTcp(address->first, address->second, kListenBacklog, "/metrics");
  if (!tcp.ok()) return tcp.status();
  listener->listen_fd_ = std::move(tcp->fd);
  listener->port_ = tcp->port;
  listener->wake_fd_ = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!listener->wake_fd_.valid()) return absl::UnavailableError(std::string("eventfd: ") + std::strerror(errno));
  listener->thread_ = std::thread([l = listener.get()] { l->Run(); });
  return listener;
}

MetricsListener::~MetricsListener() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    (void)!write(wake_fd_.get(), &one, sizeof(one));
    thread_.join();
  }
}

void MetricsListener::Run() {
  NameThisThread("gs-metrics");
  std::vector<pollfd> fds;
  for (;;) {
    const Clock::time_point now = Clock::now();
    const bool accepting = accept_pause_.accepting(now);
    fds.clear();
    fds.push_back({wake_fd_.get(), POLLIN, 0});
    fds.push_back({accepting ? listen_fd_.get() : -1, POLLIN, 0});
    Clock::time_point wake_at = accepting ? Clock::time_point::max() : accept_pause_.until();
    for (const Connection& c : connections_) {
      fds.push_back({c.fd.get(), static_cast<short>(c.stage == Stage::kWriting ? POLLOUT : POLLIN), 0});
      wake_at = std::min(wake_at, c.deadline);
    }
    int timeout_ms = -1;
    if (wake_at != Clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake_at - now).count();
      timeout_ms = static_cast<int>(std::clamp<long long>(left, 0, 60'000));
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("/metrics: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[0].revents != 0) return;  // stopping
    std::size_t i = 2;
    for (Connection& c : connections_) {
      const short revents = fds[i++].revents;
      if (revents == 0) continue;
      if (c.stage == Stage::kWriting) {
        Write(c);
      } else {
        Read(c);
      }
    }
    const Clock::time_point after = Clock::now();
    std::erase_if(connections_, [after](const Connection& c) { return !c.fd.valid() || after >= c.deadline; });
    if (fds[1].revents != 0) Accept();
  }
}

void MetricsListener::Accept() {
  for (;;) {
    UniqueFd fd(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        accept_pause_.Pause(std::string("accept: ") + std::strerror(errno));
      }
      return;  // EAGAIN: all taken
    }
    if (connections_.size() >= options_.max_connections) {
      // Room for the newcomer: the oldest connection still silent goes (a scraper sends its request at
      // once; one that has not is the likelier to be idle). None silent: the newcomer goes.
      const auto silent = std::find_if(connections_.begin(), connections_.end(),
                                       [](const Connection& c) { return c.stage == Stage::kReading; });
      if (silent == connections_.end()) continue;  // closed here
      connections_.erase(silent);
    }
    Connection& c = connections_.emplace_back();
    c.fd = std::move(fd);
    c.deadline = Clock::now() + options_.timeout;
  }
}

void MetricsListener::Read(Connection& c) {
  char buffer[4096];
  for (;;) {
    const ssize_t n = recv(c.fd.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {  // its end, or an error
      c.fd.reset();
      return;
    }
    if (c.stage == Stage::kClosing) continue;  // dropped: the answer is sent
    c.bytes.append(buffer, static_cast<std::size_t>(n));
    const std::size_t end = c.bytes.find("\r\n\r\n");
    if (end != std::string::npos && end + 4 <= kMaxHeadBytes) {
      Answer(c, c.bytes.substr(0, end));
      Write(c);
      return;
    }
    if (c.bytes.size() > kMaxHeadBytes) {
      Respond(c, "431 Request Header Fields Too Large", "the request's head is over 8 KiB\n");
      Write(c);
      return;
    }
  }
}

void MetricsListener::Answer(Connection& c, const std::string& head) {
  const std::string line = head.substr(0, head.find("\r\n"));
  const std::size_t first_space = line.find(' ');
  const std::size_t second_space = first_space == std::string::npos ? first_space : line.find(' ', first_space + 1);
  if (second_space == std::string::npos || line.compare(second_space + 1, 5, "HTTP/") != 0) {
    Respond(c, "400 Bad Request", "not an HTTP/1.x request\n");
    return;
  }
  const std::string method = line.substr(0, first_space);
  std::string path = line.substr(first_space + 1, second_space - first_space - 1);
  path = path.substr(0, path.find('?'));
  if (method != "GET" && method != "HEAD") {
    Respond(c, "405 Method Not Allowed", "GET /metrics\n");
  } else if (path != "/metrics") {
    Respond(c, "404 Not Found", "the metrics are at /metrics\n");
  } else {
    Respond(c, "200 OK", collect_(), /*head_only=*/method == "HEAD");
  }
}

void MetricsListener::Respond(Connection& c, const std::string& status, const std::string& body, bool head_only) {
  const bool metrics = status.starts_with("200");
  c.bytes = "HTTP/1.1 " + status + "\r\nContent-Type: " +
            (metrics ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8") +
            "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  if (!head_only) c.bytes += body;
  c.sent = 0;
  c.stage = Stage::kWriting;
  c.deadline = Clock::now() + options_.timeout;  // its own time to read the answer
}

void MetricsListener::Write(Connection& c) {
  while (c.sent < c.bytes.size()) {
    const ssize_t n = send(c.fd.get(), c.bytes.data() + c.sent, c.bytes.size() - c.sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      c.fd.reset();
      return;
    }
    c.sent += static_cast<std::size_t>(n);
  }
  shutdown(c.fd.get(), SHUT_WR);
  c.bytes.clear();
  c.stage = Stage::kClosing;
  c.deadline = std::min(c.deadline, Clock::now() + kCloseLinger);
}

}  // namespace gpusort
