#include "server/transport/data_port/data_socket_listener.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "gpusort/v1/data_socket.h"
#include "server/core/thread_name.h"
#include "server/transport/data_port/data_socket_io.h"
#include "server/transport/listen_address.h"
#include "server/transport/tcp_listen.h"

namespace gpusort {
namespace {

constexpr int kListenBacklog = 256;
// How often the accepting thread looks for stalled jobs and finished connections.
constexpr int kSweepMs = 250;
// Refused connections linger at most this long, at most kMaxRefused at once (more are closed at once).
constexpr std::chrono::milliseconds kRefusedLinger{1000};
constexpr std::size_t kMaxRefused = 64;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

absl::StatusOr<std::unique_ptr<DataSocketListener>> DataSocketListener::Start(const DataPortOptions& options,
                                                                              SocketSorts& sorts) {
  std::unique_ptr<DataSocketListener> listener(new DataSocketListener(options, sorts));
  absl::StatusOr<TcpListener> tcp = ListenTcp(options.host, options.port, kListenBacklog, "the data port");
  if (!tcp.ok()) return tcp.status();
  listener->listen_fd_ = std::move(tcp->fd);
  listener->port_ = tcp->port;
  listener->wake_fd_ = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!listener->wake_fd_.valid()) return absl::UnavailableError(Errno("eventfd"));
  sorts.set_port(listener->port_);
  listener->thread_ = std::thread([l = listener.get()] { l->Run(); });
  return listener;
}

DataSocketListener::~DataSocketListener() {
  stop_.store(true);
  const uint64_t one = 1;
  (void)!write(wake_fd_.get(), &one, sizeof(one));  // the accepting thread leaves its poll at once
  if (thread_.joinable()) thread_.join();
  connections_.JoinAll();
}

void DataSocketListener::Run() {
  NameThisThread("gs-data-accept");
  const auto idle = std::chrono::duration_cast<std::chrono::steady_clock::duration>(options_.limits.stall);
  while (!stop_.load()) {
    // After accept failed for want of descriptors the waiting connection keeps the socket readable:
    // it is not polled until the pause ends, or this thread would wake at once forever (issue 41).
    const bool accepting = accept_pause_.accepting(std::chrono::steady_clock::now());
    std::vector<pollfd> p = {{.fd = accepting ? listen_fd_.get() : -1, .events = POLLIN, .revents = 0},
                             {.fd = wake_fd_.get(), .events = POLLIN, .revents = 0}};
    for (const Refused& r : refused_) p.push_back({.fd = r.fd.get(), .events = POLLIN, .revents = 0});
    const bool ready = poll(p.data(), p.size(), kSweepMs) > 0;
    std::vector<short> revents;
    for (std::size_t i = 2; i < p.size(); ++i) revents.push_back(ready ? p[i].revents : 0);
    ServeRefused(revents);
    if (ready && (p[0].revents & POLLIN) != 0) Accept();
    sorts_.FailStalled(idle);
    connections_.ReapFinished();
  }
}

void DataSocketListener::Accept() {
  for (;;) {
    UniqueFd fd(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        accept_pause_.Pause(Errno("accept"));
      } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
        spdlog::warn("data port: {}", Errno("accept"));
      }
      return;
    }
    const int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connections_.running() >= options_.max_connections) {
      // Told why, at once and without waiting on the caller: a refusal must not hold this thread.
      const std::string reason = "the data port already serves " + std::to_string(options_.max_connections) +
                                 " connections (--data-max-connections); retry later";
      const auto header = v1::data_socket::EncodeReply(
          {.code = static_cast<uint32_t>(absl::StatusCode::kResourceExhausted),
           .text_length = static_cast<uint32_t>(reason.size())});
      (void)send(fd.get(), header.data(), header.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      (void)send(fd.get(), reason.data(), reason.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      Refuse(std::move(fd));
      continue;
    }
    connections_.Start([this, fd = std::move(fd)] {
      ServeDataConnection(fd.get(), SocketPeerHost(fd.get()), sorts_, options_.limits, stop_);
      shutdown(fd.get(), SHUT_RDWR);
    });
  }
}

void DataSocketListener::Refuse(UniqueFd fd) {
  if (refused_.size() >= kMaxRefused) return;  // closed now: the refusal may be lost, the thread is not
  shutdown(fd.get(), SHUT_WR);
  refused_.push_back({std::move(fd), std::chrono::steady_clock::now() + kRefusedLinger});
}

void DataSocketListener::ServeRefused(const std::vector<short>& revents) {
  const auto now = std::chrono::steady_clock::now();
  std::vector<Refused> still;
  for (std::size_t i = 0; i < refused_.size(); ++i) {
    const bool open = i >= revents.size() || revents[i] == 0 || DropPending(refused_[i].fd.get());
    if (open && now < refused_[i].close_at) still.push_back(std::move(refused_[i]));
  }
  refused_ = std::move(still);
}

absl::StatusOr<std::unique_ptr<DataSocketListener>> StartDataPort(const ServerConfig& config, SocketSorts& sorts) {
  if (config.data_port < 0) return nullptr;
  if (!config.tls_cert.empty()) {
    return absl::InvalidArgumentError(
        "--data-port carries keys in clear text; it cannot be combined with TLS on the gRPC port (--tls-cert)");
  }
  DataPortOptions options;
  options.host = ListenHost(config.listen);
  options.port = config.data_port;
  options.max_connections = config.data_max_connections;
  options.limits.idle_between_parts =
      std::chrono::milliseconds(static_cast<int64_t>(config.data_idle_timeout_seconds * 1000));
  options.limits.stall = std::chrono::milliseconds(static_cast<int64_t>(config.stream_idle_timeout_seconds * 1000));
  absl::StatusOr<std::unique_ptr<DataSocketListener>> listener = DataSocketListener::Start(options, sorts);
  if (listener.ok()) spdlog::info("data port {} (SortOnSockets; plaintext)", (*listener)->port());
  return listener;
}

}  // namespace gpusort
