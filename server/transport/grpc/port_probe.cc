#include "server/transport/grpc/port_probe.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/core/thread_name.h"
#include "server/core/unique_fd.h"
#include "server/transport/grpc/grpc_accept_guard.h"

namespace gpusort {
namespace {

constexpr std::chrono::milliseconds kConnectWait{500};

}  // namespace

PortProbe::PortProbe(std::string host, std::shared_ptr<GrpcAcceptGuard> guard, std::function<void(bool)> changed,
                     std::chrono::milliseconds period)
    : host_(std::move(host)), guard_(std::move(guard)), changed_(std::move(changed)), period_(period) {
  thread_ = std::thread([this] { Run(); });
}

PortProbe::~PortProbe() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void PortProbe::Run() {
  NameThisThread("gs-port-probe");
  bool accepting = true;
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, period_, [this] { return stop_; })) {
    lock.unlock();
    const bool now = guard_->accepting() || Connects();
    if (now != accepting) {
      accepting = now;
      changed_(accepting);
    }
    lock.lock();
  }
}

bool PortProbe::Connects() {
  const std::uint64_t before = guard_->accepted() + guard_->refused();
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host_.c_str(), std::to_string(guard_->port()).c_str(), &hints, &found) != 0) return false;
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, freeaddrinfo);
  // No descriptor for this socket: the port could not have one for a caller's either.
  UniqueFd fd(socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return false;
  if (connect(fd.get(), found->ai_addr, found->ai_addrlen) != 0 && errno != EINPROGRESS) return false;
  pollfd p{fd.get(), POLLOUT, 0};
  if (poll(&p, 1, static_cast<int>(kConnectWait.count())) != 1) return false;
  // The kernel completes the handshake by itself; whether gRPC took the connection shows in its guard.
  const auto deadline = std::chrono::steady_clock::now() + kConnectWait;
  while (guard_->accepted() + guard_->refused() == before) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return guard_->accepting();
}

}  // namespace gpusort
