#include "server/transport/shm_socket/closing_threads.h"

#include <sys/socket.h>

#include <cerrno>
#include <system_error>
#include <thread>

#include "server/core/thread_name.h"
#include "server/transport/shm_socket/caller_descriptor.h"

namespace gpusort {
namespace {

// Reads out what `connection` still holds and closes each descriptor that came in it, here, one by one;
// stops at its end, an error, or when the queue is empty (the caller can send no more once SHUT_RD is
// done: its sends fail with EPIPE).
void DrainConnection(int connection) {
  shutdown(connection, SHUT_RD);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedDescriptors)];
  char byte;
  for (;;) {
    iovec iov{&byte, 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(connection, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;
    bool had_fds = false;
    ForEachPassedDescriptor(msg, [&had_fds](int fd) {
      close(fd);  // may block: this is the owner's thread
      had_fds = true;
    });
    if (n == 0 && !had_fds) return;  // its end
  }
}

}  // namespace

void ClosingThreads::Add(uid_t owner, UniqueFd fd, bool connection) {
  if (!fd.valid()) return;
  std::lock_guard lock(mutex_);
  User& user = users_[owner];
  user.queue.push_back({std::move(fd), connection});
  ++user.held;
  ++held_;
  if (!user.running) {
    try {
      std::thread([this, owner] { Run(owner); }).detach();
      user.running = true;
    } catch (const std::system_error&) {
      // No thread to be had now: the descriptor waits, counted against its user, for the next one.
    }
  }
}

std::size_t ClosingThreads::held() {
  std::lock_guard lock(mutex_);
  return held_;
}

std::size_t ClosingThreads::held(uid_t owner) {
  std::lock_guard lock(mutex_);
  const auto it = users_.find(owner);
  return it == users_.end() ? 0 : it->second.held;
}

void ClosingThreads::Run(uid_t owner) {
  NameThisThread("gs-fd-closer");
  std::unique_lock lock(mutex_);
  for (;;) {
    User& user = users_.at(owner);
    if (user.queue.empty()) {
      users_.erase(owner);  // nothing held: the next descriptor starts a new thread
      return;
    }
    Item item = std::move(user.queue.front());
    user.queue.pop_front();
    lock.unlock();
    if (item.connection) DrainConnection(item.fd.get());
    item.fd.reset();  // may block: nobody waits for it
    lock.lock();
    --users_.at(owner).held;
    --held_;
  }
}

}  // namespace gpusort
