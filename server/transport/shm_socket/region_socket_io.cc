#include "server/transport/shm_socket/region_socket_io.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

namespace gpusort {
namespace {

// This thread's room to receive into, kept for its next message: a message is read into it whole and
// only its own bytes are copied out. Sizing a fresh vector to the largest record (64 KiB on the calls
// socket) for every message zeroed it, and freeing a 64 KiB block makes glibc consolidate its free
// lists: the largest user-space costs of a small call on the socket (perf on the CPU server, 1-key
// sorts: memset 2.1% of its samples, malloc_consolidate 0.4%).
std::byte* ReceiveRoom(std::size_t bytes) {
  thread_local std::unique_ptr<std::byte[]> room;
  thread_local std::size_t room_bytes = 0;
  if (room_bytes < bytes) {
    room.reset(new std::byte[bytes]);  // left uninitialized: only received bytes are read from it
    room_bytes = bytes;
  }
  return room.get();
}

}  // namespace

absl::StatusOr<std::optional<IncomingMessage>> ReceiveMessage(int connection, uid_t sender, std::size_t max_bytes) {
  IncomingMessage in;
  std::byte* const room = ReceiveRoom(max_bytes);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedDescriptors)];
  iovec iov{room, max_bytes};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(connection, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::nullopt;
    return absl::UnavailableError(std::string("reading the registration: ") + std::strerror(errno));
  }
  // Descriptors first: whatever the message says, none of them may stay open. Every one is read (room for kMaxPassedDescriptors), so that none is left to the kernel to close on
  // this thread when the message is consumed: the last close of a caller's descriptor may block.
  ForEachPassedDescriptor(msg, [&in, sender](int fd) {
    UniqueFd owned(fd);
    const CallerDescriptorKind kind = KindOfCallerDescriptor(fd);
    if (kind == CallerDescriptorKind::kOther) CloseAside(sender, std::move(owned));
    in.fds.push_back(std::move(owned));
    in.fd_kinds.push_back(kind);
  });
  in.fds_truncated = (msg.msg_flags & MSG_CTRUNC) != 0;
  in.truncated = (msg.msg_flags & MSG_TRUNC) != 0;
  if (n == 0 && in.fds.empty()) {
    in.closed = true;
    return in;
  }
  in.bytes.assign(room, room + n);
  return in;
}

void SendReply(int connection, absl::StatusCode code, std::string_view text) {
  const auto record = v1::region_socket::EncodeReply(static_cast<std::uint32_t>(code), text);
  ssize_t n;
  do {
    n = send(connection, record.data(), record.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
}

}  // namespace gpusort
