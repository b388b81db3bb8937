#include "gpusort/shared_memory.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "client/src/shm_socket_connect.h"
#include "gpusort/v1/region_socket.h"

namespace gpusort {
namespace {

absl::Status Errno(absl::StatusCode code, const std::string& what) {
  return absl::Status(code, what + ": " + std::strerror(errno));
}

// Closes a descriptor on every early return.
struct FdCloser {
  int fd = -1;
  ~FdCloser() {
    if (fd >= 0) close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

absl::Status SendRequest(int connection, int fd, std::size_t size, v1::region_socket::RegionKind kind) {
  namespace wire = v1::region_socket;
  const auto record = wire::EncodeRequest({.kind = static_cast<std::uint16_t>(kind), .size = size});
  iovec iov{const_cast<std::byte*>(record.data()), record.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  ssize_t n;
  do {
    n = sendmsg(connection, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(record.size())) {
    return Errno(absl::StatusCode::kUnavailable, "sending the shared-memory registration");
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::region_socket::Reply> ReceiveReply(int connection, std::chrono::milliseconds timeout) {
  namespace wire = v1::region_socket;
  pollfd p{connection, POLLIN, 0};
  int ready;
  do {
    ready = poll(&p, 1, static_cast<int>(timeout.count()));
  } while (ready < 0 && errno == EINTR);
  if (ready == 0) {
    return absl::UnavailableError("the server answered no shared-memory registration within " +
                                  std::to_string(timeout.count()) + " ms");
  }
  std::array<std::byte, wire::kReplyBytes> record{};
  ssize_t n;
  // A server that closes right after answering, with the request still unread (it refused the
  // connection at once), makes the first read report ECONNRESET; the answer is still there to read after.
  int resets = 0;
  do {
    n = recv(connection, record.data(), record.size(), MSG_DONTWAIT);
  } while (n < 0 && (errno == EINTR || (errno == ECONNRESET && resets++ == 0)));
  if (n < 0) return Errno(absl::StatusCode::kUnavailable, "reading the shared-memory registration's answer");
  auto reply = wire::DecodeReply(std::span(record.data(), static_cast<std::size_t>(n)));
  if (!reply.has_value()) {
    return absl::UnavailableError(n == 0 ? "the server closed the shared-memory socket without an answer"
                                         : "the server's shared-memory answer is not a reply record");
  }
  return *reply;
}

// Registers `size` bytes of `fd` as a region of `kind` on the socket at `socket_path`: the open
// connection that keeps the region registered, and the region's id.
struct Registered {
  int connection;
  std::string id;
};
absl::StatusOr<Registered> RegisterOnSocket(const std::string& socket_path, int fd, std::size_t size,
                                            v1::region_socket::RegionKind kind, std::chrono::milliseconds timeout) {
  absl::StatusOr<int> connected = client_internal::ConnectToShmSocket(socket_path);
  if (!connected.ok()) return connected.status();
  FdCloser connection{*connected};
  if (absl::Status sent = SendRequest(connection.fd, fd, size, kind); !sent.ok()) {
    // A server with too many connections waiting answers at once and closes (--shm-max-pending): its
    // reason, when it is there to read, says more than the broken pipe.
    absl::StatusOr<v1::region_socket::Reply> refusal = ReceiveReply(connection.fd, std::chrono::milliseconds(0));
    if (refusal.ok() && refusal->code != 0) {
      return absl::Status(static_cast<absl::StatusCode>(refusal->code), "registering shared memory: " + refusal->text);
    }
    return sent;
  }
  absl::StatusOr<v1::region_socket::Reply> reply = ReceiveReply(connection.fd, timeout);
  if (!reply.ok()) return reply.status();
  if (reply->code != 0) {
    return absl::Status(static_cast<absl::StatusCode>(reply->code), "registering shared memory: " + reply->text);
  }
  return Registered{connection.release(), std::move(reply->text)};
}

}  // namespace

absl::StatusOr<std::unique_ptr<SharedMemoryRegistration>> SharedMemoryRegistration::Register(
    const std::string& socket_path, int fd, std::size_t size, std::chrono::milliseconds timeout) {
  auto registered = RegisterOnSocket(socket_path, fd, size, v1::region_socket::RegionKind::kHostMemory, timeout);
  if (!registered.ok()) return registered.status();
  return std::unique_ptr<SharedMemoryRegistration>(
      new SharedMemoryRegistration(registered->connection, std::move(registered->id)));
}

absl::StatusOr<std::unique_ptr<SharedMemoryRegistration>> SharedMemoryRegistration::RegisterDeviceMemory(
    const std::string& socket_path, int fd, std::size_t size, std::chrono::milliseconds timeout) {
  auto registered = RegisterOnSocket(socket_path, fd, size, v1::region_socket::RegionKind::kDeviceMemory, timeout);
  if (!registered.ok()) return registered.status();
  return std::unique_ptr<SharedMemoryRegistration>(
      new SharedMemoryRegistration(registered->connection, std::move(registered->id)));
}

client::RegionRef SharedMemoryRegistration::Ref(std::size_t offset, std::size_t length) const {
  return client::RegionRef{.region_id = id_, .offset = offset, .length = length};
}

SharedMemoryRegistration::~SharedMemoryRegistration() {
  if (connection_ >= 0) close(connection_);  // this is how a region is unregistered
}

absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> SharedMemoryRegion::Create(const std::string& socket_path,
                                                                               std::size_t bytes,
                                                                               std::chrono::milliseconds timeout) {
  if (bytes == 0) return absl::InvalidArgumentError("a shared-memory region needs at least 1 byte");
  FdCloser fd{memfd_create("gpusort-region", MFD_CLOEXEC | MFD_ALLOW_SEALING)};
  if (fd.fd < 0) return Errno(absl::StatusCode::kInternal, "memfd_create");
  if (ftruncate(fd.fd, static_cast<off_t>(bytes)) != 0) return Errno(absl::StatusCode::kResourceExhausted, "ftruncate");
  // The server maps only memory that cannot shrink under it; growing is of no use either.
  if (fcntl(fd.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
    return Errno(absl::StatusCode::kInternal, "sealing the memfd");
  }
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.fd, 0);
  if (data == MAP_FAILED) return Errno(absl::StatusCode::kResourceExhausted, "mmap");
  std::unique_ptr<SharedMemoryRegion> region(new SharedMemoryRegion());
  region->data_ = static_cast<std::byte*>(data);
  region->size_ = bytes;
  region->fd_ = fd.release();
  auto registration = SharedMemoryRegistration::Register(socket_path, region->fd_, bytes, timeout);
  if (!registration.ok()) return registration.status();
  region->registration_ = *std::move(registration);
  return region;
}

SharedMemoryRegion::~SharedMemoryRegion() {
  registration_.reset();
  if (data_ != nullptr) munmap(data_, size_);
  if (fd_ >= 0) close(fd_);
}

client::RegionRef SharedMemoryRegion::Ref(std::size_t offset, std::size_t length) const {
  return registration_->Ref(offset, length);
}

}  // namespace gpusort
