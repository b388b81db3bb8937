// What the shared-memory suites share: a client for a TestServer with shared memory on, sealed memfds,
// raw registration records sent by hand, and reading and writing typed arrays in a region.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "client/src/proto_convert.h"
#include "gpusort/client.h"
#include "gpusort/shared_memory.h"
#include "gpusort/v1/region_socket.h"
#include "server/core/unique_fd.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {

// The client's region calls go on the shared-memory socket (its default) unless GPUSORT_TEST_SHM_CALLS
// is "grpc": ctest runs the shared-memory suites both ways (tests/service/CMakeLists.txt).
inline bool ShmCallsOnSocket() {
  const char* how = std::getenv("GPUSORT_TEST_SHM_CALLS");
  return how == nullptr || std::string(how) != "grpc";
}

inline Client ShmClientFor(const TestServer& server) {
  ClientOptions options;
  options.target = server.address();
  options.shm_socket = server.shm_socket();
  options.shm_calls_on_socket = ShmCallsOnSocket();
  return Client(options);
}

// TestAlgorithm and ExpectedBackend (test_server.h) as the client library names them.
inline client::Algorithm ClientTestAlgorithm() { return client_internal::FromProto(TestAlgorithm()); }
inline client::Backend ClientExpectedBackend() { return client_internal::FromProto(ExpectedBackend()); }

// A region reference as a raw request carries it.
inline v1::RegionRef WireRef(const client::RegionRef& ref) { return client_internal::ToProto(ref); }

// A memfd of `bytes`, sealed as the server wants it (F_SEAL_SHRINK) unless `seals` says otherwise.
inline UniqueFd Memfd(std::size_t bytes, int seals = F_SEAL_SHRINK | F_SEAL_GROW, unsigned flags = 0) {
  UniqueFd fd(memfd_create("gpusort-test", MFD_CLOEXEC | MFD_ALLOW_SEALING | flags));
  if (!fd.valid()) return fd;
  if (ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return UniqueFd();
  if (seals != 0 && fcntl(fd.get(), F_ADD_SEALS, seals) != 0) return UniqueFd();
  return fd;
}

// The code a registration of `fd` for `size` bytes gets (OK: the registration is dropped at once).
inline absl::StatusCode RegisterCode(const TestServer& server, int fd, std::size_t size,
                                     std::string* message = nullptr) {
  auto registration = SharedMemoryRegistration::Register(server.shm_socket(), fd, size, std::chrono::seconds(20));
  if (message != nullptr) *message = registration.ok() ? "" : std::string(registration.status().message());
  return registration.status().code();
}

// A connection to `path` (no message sent); invalid when it cannot connect.
inline UniqueFd ConnectTo(const std::string& path) {
  UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) return UniqueFd();
  return fd;
}

// Sends `bytes` with `fds` attached on `connection` and reads the reply record (nullopt: none within 10 s,
// or the connection closed without one).
// `after_send` runs once the message is sent, before the reply is read (a test that must let go of its
// copies of the descriptors first).
inline std::optional<v1::region_socket::Reply> SendRaw(int connection, const std::vector<std::byte>& bytes,
                                                       const std::vector<int>& fds,
                                                       const std::function<void()>& after_send = {}) {
  std::vector<char> control(fds.empty() ? 0 : CMSG_SPACE(sizeof(int) * fds.size()));
  iovec iov{const_cast<std::byte*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  if (sendmsg(connection, &msg, MSG_NOSIGNAL) < 0) return std::nullopt;
  if (after_send) after_send();
  timeval timeout{10, 0};
  setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::array<std::byte, v1::region_socket::kReplyBytes> reply{};
  const ssize_t n = recv(connection, reply.data(), reply.size(), 0);
  if (n <= 0) return std::nullopt;
  return v1::region_socket::DecodeReply(std::span(reply.data(), static_cast<std::size_t>(n)));
}

// The server still registers and sorts: a fresh region, a sort in it, the right answer.
inline void ExpectStillServing(const TestServer& server) {
  Client client = ShmClientFor(server);
  auto region = client.CreateSharedMemory(4000);
  ASSERT_TRUE(region.ok()) << region.status();
  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 1000, 4);
  std::memcpy((*region)->data(), keys.data(), keys.size() * sizeof(uint32_t));
  SortOptions o;
  o.algorithm = ClientTestAlgorithm();
  auto info = client.SortInRegion(client::DType::kUint32, o, client::Payload::kNone, (*region)->Ref(0, 4000),
                                  (*region)->Ref(0, 4000));
  ASSERT_TRUE(info.ok()) << info.status();
  std::vector<uint32_t> sorted(keys.size());
  std::memcpy(sorted.data(), (*region)->data(), sorted.size() * sizeof(uint32_t));
  EXPECT_EQ(sorted, ReferenceSort(keys, SortOrder::kAscending));
}

inline std::vector<std::byte> RequestRecord(const v1::region_socket::Request& request) {
  const auto record = v1::region_socket::EncodeRequest(request);
  return {record.begin(), record.end()};
}

template <typename T>
void Put(SharedMemoryRegion& region, std::size_t offset, const std::vector<T>& v) {
  std::memcpy(region.data() + offset, v.data(), v.size() * sizeof(T));
}
template <typename T>
std::vector<T> Get(const SharedMemoryRegion& region, std::size_t offset, std::size_t count) {
  std::vector<T> v(count);
  std::memcpy(v.data(), region.data() + offset, count * sizeof(T));
  return v;
}

#define EXPECT_CODE(expr, want, text)                                              \
  do {                                                                             \
    auto _r = (expr);                                                              \
    ASSERT_FALSE(_r.ok()) << "expected " #want;                                    \
    EXPECT_EQ(_r.status().code(), absl::StatusCode::want) << _r.status();          \
    EXPECT_THAT(std::string(_r.status().message()), ::testing::HasSubstr(text));   \
  } while (0)

}  // namespace gpusort::testing
