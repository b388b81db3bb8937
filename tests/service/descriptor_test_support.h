// What the tests of callers' descriptors share: counting this process's descriptors, registering as
// another user, and a gRPC sort that shows the server still serves.
#pragma once

#include <dirent.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/service/shm_test_support.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {

// Descriptors this process has open now.
inline std::size_t OpenDescriptors() {
  std::size_t n = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++n;
    closedir(dir);
  }
  return n;
}

// In a child process of user `uid`: registers a sealed memfd on `path`; its exit code is the reply's
// status code (or 100 and up for what failed before). Only system calls after fork: the test is
// multi-threaded.
inline int RegisterAsUser(uid_t uid, const std::string& path) {
  UniqueFd memory = Memfd(4096);
  const std::vector<std::byte> record = RequestRecord({.kind = 1, .size = 4096});
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  const pid_t child = fork();
  if (child < 0) return 100;
  if (child == 0) {
    if (setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0) _exit(101);
    const int connection = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (connect(connection, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) _exit(102);
    iovec iov{const_cast<std::byte*>(record.data()), record.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    const int fd = memory.get();
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
    if (sendmsg(connection, &msg, MSG_NOSIGNAL) < 0) _exit(103);
    pollfd readable{connection, POLLIN, 0};
    if (poll(&readable, 1, 5000) != 1) _exit(104);  // no reply within 5 s
    unsigned char reply[512];
    if (recv(connection, reply, sizeof(reply), 0) < 12) _exit(105);
    std::uint32_t code;  // the reply's status code, after its 4-byte magic and 4-byte version
    std::memcpy(&code, reply + 8, sizeof(code));
    _exit(static_cast<int>(code));
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status)) return 106;
  return WEXITSTATUS(status);
}

// A gRPC Sort of 1000 keys through `server`, checked: the other transports are still served.
inline void ExpectAGrpcSort(TestServer& server) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::SortRequest request;
  *request.mutable_options() = TestSortOptions(v1::DTYPE_UINT32);
  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 1000, 7);
  request.set_keys(ToBytes(keys));
  v1::SortResponse response;
  const grpc::Status status = server.stub().Sort(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(FromBytes<uint32_t>(response.keys()), ReferenceSort(keys, SortOrder::kAscending));
}

}  // namespace gpusort::testing
