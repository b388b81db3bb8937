// A caller's descriptor that blocks whoever touches it (issue 41): a file on a FUSE mount whose daemon
// withholds its replies blocks fstat and close; a TCP socket with SO_LINGER whose peer reads nothing
// blocks its last close. The registration listener serves every user's registrations on one thread, so
// one such descriptor froze them all, and the server's shutdown with them. Each test hands the server
// such a descriptor and checks that everyone else is still served at once and that the server still
// stops at once. (The stand-in is the lingering socket: it needs no FUSE mount, which CI may not allow.)
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

#include "server/transport/shm_socket/caller_descriptor.h"
#include "server/transport/descriptor_limit.h"
#include "tests/service/descriptor_test_support.h"
#include "tests/service/shm_test_support.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// A TCP socket whose last close blocks for `linger`: its send queue is full, its peer (a listener that
// never accepts) reads nothing, and SO_LINGER makes close wait for the queue to drain.
struct LingeringSocket {
  UniqueFd peer_listener;
  UniqueFd socket;

  explicit LingeringSocket(std::chrono::seconds linger_for) {
    peer_listener = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (bind(peer_listener.get(), reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        listen(peer_listener.get(), 1) != 0 ||
        getsockname(peer_listener.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return;
    }
    socket = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (connect(socket.get(), reinterpret_cast<sockaddr*>(&address), length) != 0 && errno != EINPROGRESS) return;
    pollfd writable{socket.get(), POLLOUT, 0};
    (void)poll(&writable, 1, 5000);
    const std::vector<char> chunk(1 << 16, 'x');
    while (send(socket.get(), chunk.data(), chunk.size(), MSG_NOSIGNAL) > 0) {
    }
    const struct linger on{.l_onoff = 1, .l_linger = static_cast<int>(linger_for.count())};
    setsockopt(socket.get(), SOL_SOCKET, SO_LINGER, &on, sizeof(on));
  }
};

// Sends a registration carrying `fd` and lets go of the test's own copy at once, so that the server's
// copy is the last one (its close is the one that blocks); returns the reply.
std::optional<v1::region_socket::Reply> RegisterAndLetGo(const TestServer& server, UniqueFd fd,
                                                         std::uint16_t kind = 1) {
  UniqueFd connection = ConnectTo(server.shm_socket());
  if (!connection.valid()) return std::nullopt;
  return SendRaw(connection.get(), RequestRecord({.kind = kind, .size = 4096}), {fd.get()}, [&fd] { fd.reset(); });
}

TEST(StalledDescriptors, ADescriptorWhoseCloseBlocksHoldsUpNoOtherCallerNorTheShutdown) {
  auto server = std::make_unique<TestServer>(ShmConfig());
  // The test lets go of its copy right after sending; the server's copy is then the last one, so its close
  // is the one that blocks, unless the server read and closed it first (it refused it in microseconds).
  // Then the test's own close blocked instead and nothing was shown: try again, a few times.
  bool shown = false;
  for (int attempt = 0; attempt < 3 && !shown; ++attempt) {
    LingeringSocket stall(std::chrono::seconds(10));
    ASSERT_TRUE(stall.socket.valid());
    const std::size_t closing_before = DescriptorsClosingAside();
    const auto reply = RegisterAndLetGo(*server, std::move(stall.socket));
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->code, static_cast<uint32_t>(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(reply->text, HasSubstr("not shared memory"));
    shown = DescriptorsClosingAside() > closing_before;  // its close is under way, on the closing thread
  }
  if (!shown) GTEST_SKIP() << "the server's copy was never the last one: nothing shown";

  // Another user's registration and call, while the refused descriptor's close is still blocked.
  const auto start = Clock::now();
  ExpectStillServing(*server);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5)) << "the listener waited on the caller's descriptor";

  // The server stops (as on SIGTERM) without waiting for that close.
  const auto stop = Clock::now();
  server.reset();
  EXPECT_LT(Clock::now() - stop, std::chrono::seconds(5)) << "shutdown waited on the caller's descriptor";
}

// Parks a descriptor whose close blocks (for `linger`) on the closing thread of the test's user, and
// returns what keeps it blocked (its peer: closing that ends the wait); null when the server read and
// closed it before the test let go of its own copy, three times over.
std::unique_ptr<LingeringSocket> ParkABlockedClose(const TestServer& server, std::chrono::seconds linger) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto stall = std::make_unique<LingeringSocket>(linger);
    if (!stall->socket.valid()) return nullptr;
    const std::size_t closing_before = DescriptorsClosingAside(geteuid());
    const auto reply = RegisterAndLetGo(server, std::move(stall->socket));
    if (reply.has_value() && DescriptorsClosingAside(geteuid()) > closing_before) return stall;
  }
  return nullptr;
}

// Issue 41's second attack session: a user parked one lingering socket on the one closing thread, then
// sent messages of 253 cheap descriptors each, which all waited behind that close and filled the
// process's descriptor table (8191 of 8192 in 0.1 s): health, gRPC and every user's registrations failed
// with it. Now they wait on that user's own closing thread, the listener stops taking the user's
// descriptors past its share, and the user's further connections are refused saying why.
TEST(StalledDescriptors, WhatWaitsBehindABlockedCloseStaysWithinItsUsersShare) {
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  constexpr rlim_t kLimit = 16384;  // shares of 976 descriptors closing aside, 122 a user
  if (before.rlim_max < kLimit) GTEST_SKIP() << "the hard descriptor limit is below " << kLimit;
  rlimit test_limit = before;
  test_limit.rlim_cur = kLimit;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &test_limit), 0);
  auto server = std::make_unique<TestServer>(ShmConfig());
  const std::size_t user_share = SharesOf(kLimit).caller_descriptors_closing / 8;  // over 16 here
  const std::unique_ptr<LingeringSocket> parked = ParkABlockedClose(*server, std::chrono::seconds(10));
  if (parked == nullptr) {
    setrlimit(RLIMIT_NOFILE, &before);
    GTEST_SKIP() << "the server's copy was never the last one: nothing shown";
  }

  // 40 messages of 253 descriptors (one pipe's, repeated: each arrives as a descriptor of its own).
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd pipe_read(pipe_fds[0]), pipe_write(pipe_fds[1]);
  const std::vector<int> many(253, pipe_read.get());
  const std::size_t open_before = OpenDescriptors();
  constexpr int kMessages = 40;
  int refused_for_closes = 0;
  for (int i = 0; i < kMessages; ++i) {
    UniqueFd connection = ConnectTo(server->shm_socket());
    ASSERT_TRUE(connection.valid());
    const auto reply = SendRaw(connection.get(), RequestRecord({.kind = 1, .size = 4096}), many);
    if (reply.has_value() && reply->code == static_cast<uint32_t>(absl::StatusCode::kResourceExhausted) &&
        reply->text.find("still being closed") != std::string::npos) {
      ++refused_for_closes;
    }
  }
  const std::size_t grew = OpenDescriptors() - open_before;
  // What the user could still hand over: its share, the one message that crossed it, and a connection
  // for each refusal (closed on its thread too). Before, all 10,120 descriptors stayed open.
  EXPECT_LT(grew, user_share + 253 + kMessages + 32) << "the user's descriptors were taken past its share";
  EXPECT_GE(refused_for_closes, kMessages - 2) << "the user's connections were not refused while its closes wait";

  // Other users and other transports are served meanwhile.
  if (geteuid() == 0) {
    EXPECT_EQ(RegisterAsUser(65534, server->shm_socket()), 0) << "another user's registration was not accepted";
  }
  ExpectAGrpcSort(*server);

  const auto stop = Clock::now();
  server.reset();
  EXPECT_LT(Clock::now() - stop, std::chrono::seconds(5)) << "shutdown waited on the caller's descriptors";
  setrlimit(RLIMIT_NOFILE, &before);
}

// The same descriptor passed as device memory: it never reaches the backend (whose import would look at
// it), and nothing waits on its close either.
TEST(StalledDescriptors, AsDeviceMemoryItIsRefusedUnlookedAt) {
  TestServer server(ShmConfig());
  LingeringSocket stall(std::chrono::seconds(10));
  ASSERT_TRUE(stall.socket.valid());
  const auto reply = RegisterAndLetGo(server, std::move(stall.socket), /*kind=*/2);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->code, static_cast<uint32_t>(absl::StatusCode::kInvalidArgument)) << reply->text;
  EXPECT_THAT(reply->text, HasSubstr("not CUDA device memory"));
  const auto start = Clock::now();
  ExpectStillServing(server);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

// What the listener classifies without touching a file's file system.
TEST(StalledDescriptors, KindsAreToldApartWithoutBlockingCalls) {
  UniqueFd memory = Memfd(4096);
  EXPECT_EQ(KindOfCallerDescriptor(memory.get()), CallerDescriptorKind::kSharedMemory);
  UniqueFd unsealed(memfd_create("gpusort-test", MFD_CLOEXEC));  // tmpfs all the same: nothing blocks on it
  EXPECT_EQ(KindOfCallerDescriptor(unsealed.get()), CallerDescriptorKind::kSharedMemory);
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd pipe_read(pipe_fds[0]), pipe_write(pipe_fds[1]);
  EXPECT_EQ(KindOfCallerDescriptor(pipe_read.get()), CallerDescriptorKind::kOther);
  UniqueFd a_socket(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(KindOfCallerDescriptor(a_socket.get()), CallerDescriptorKind::kOther);
  UniqueFd file(open("/proc/self/status", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(KindOfCallerDescriptor(file.get()), CallerDescriptorKind::kOther);
  EXPECT_EQ(KindOfCallerDescriptor(-1), CallerDescriptorKind::kOther);
  UniqueFd event(eventfd(0, EFD_CLOEXEC));  // anon_inode: what a driver's exported handle looks like
  EXPECT_EQ(KindOfCallerDescriptor(event.get()), CallerDescriptorKind::kDeviceMemoryHandle);
}

// A file whose /proc link reads "/dev/nvidia0" but which lives on a mount of another mount namespace (a
// caller can mount FUSE over "/dev" in its own: issue 41's second attack session froze the socket so) is
// no CUDA handle. A child process mounts ramfs over /dev in a namespace of its own and hands the file back.
// Skipped where no mount namespace can be made here.
TEST(StalledDescriptors, APathThatOnlyReadsLikeTheDriversIsNoDeviceHandle) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd parent_end(pair[0]), child_end(pair[1]);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const bool isolated = unshare(CLONE_NEWNS) == 0 || unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0;
    // Private first: a mount over /dev must never reach the test's own namespace.
    if (!isolated || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("spoof", "/dev", "ramfs", 0, nullptr) != 0) {
      _exit(77);
    }
    // Seen from outside the namespace, the link names the path from the mount's root: "/dev/nvidia0".
    const int fd = mkdir("/dev/dev", 0700) == 0 ? open("/dev/dev/nvidia0", O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;
    if (fd >= 0) (void)SendRaw(child_end.get(), {std::byte{'x'}}, {fd}, [] { _exit(0); });
    _exit(1);
  }
  child_end.reset();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) GTEST_SKIP() << "no mount namespace can be made here";
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  char byte;
  iovec iov{&byte, 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ASSERT_EQ(recvmsg(parent_end.get(), &msg, MSG_CMSG_CLOEXEC), 1);
  int raw = -1;
  std::memcpy(&raw, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
  UniqueFd spoof(raw);
  char link[256] = {};
  ASSERT_GT(readlink(("/proc/self/fd/" + std::to_string(raw)).c_str(), link, sizeof(link) - 1), 0);
  ASSERT_EQ(std::string(link), "/dev/nvidia0") << "the stand-in does not read as the driver's file";
  EXPECT_EQ(KindOfCallerDescriptor(spoof.get()), CallerDescriptorKind::kOther);
  // The server's own /dev is a device file system: a real driver file there would count.
  UniqueFd null(open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(KindOfCallerDescriptor(null.get()), CallerDescriptorKind::kOther) << "only /dev/nvidia* counts";
}

}  // namespace
}  // namespace gpusort::testing
