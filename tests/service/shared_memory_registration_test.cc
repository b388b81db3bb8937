// Registration over the shared-memory socket (--shm-socket; sort.proto, "Shared memory"): only a
// sealed, read-write memfd of the asked size is taken, every other descriptor is refused with its own
// code (and closed), malformed records are refused, idle and surplus connections are closed, a region
// lives exactly as long as its connection, the socket file is created and removed safely, and the
// retired name-based RegisterRegion RPC opens nothing. After each refusal the server still serves.
#include <poll.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/service/shm_test_support.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// A directory on a disk file system (not tmpfs) for a regular file, or empty when there is none.
std::string DiskDirectory() {
  for (const char* dir : {".", "/var/tmp", "/tmp"}) {
    struct statfs fs {};
    if (statfs(dir, &fs) == 0 && fs.f_type != TMPFS_MAGIC && access(dir, W_OK) == 0) return dir;
  }
  return "";
}

TEST(SharedMemoryRegistration, OnlyASealedReadWriteMemfdOfTheAskedSizeIsTaken) {
  TestServer server(ShmConfig());
  std::string why;

  UniqueFd good = Memfd(1 << 16);
  ASSERT_TRUE(good.valid());
  EXPECT_EQ(RegisterCode(server, good.get(), 1 << 16, &why), absl::StatusCode::kOk) << why;
  EXPECT_EQ(RegisterCode(server, good.get(), 100, &why), absl::StatusCode::kOk) << "a prefix is fine: " << why;

  // Not sealed against shrinking: the owner could cut it under the server (SIGBUS).
  UniqueFd unsealed = Memfd(1 << 16, 0);
  EXPECT_EQ(RegisterCode(server, unsealed.get(), 1 << 16, &why), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(why, HasSubstr("F_SEAL_SHRINK"));
  UniqueFd grow_only = Memfd(1 << 16, F_SEAL_GROW);
  EXPECT_EQ(RegisterCode(server, grow_only.get(), 1 << 16, &why), absl::StatusCode::kFailedPrecondition);
  UniqueFd unsealable(memfd_create("gpusort-test", MFD_CLOEXEC));  // no MFD_ALLOW_SEALING: never sealable
  ASSERT_EQ(ftruncate(unsealable.get(), 4096), 0);
  EXPECT_EQ(RegisterCode(server, unsealable.get(), 4096, &why), absl::StatusCode::kFailedPrecondition);

  // A named POSIX shared-memory object (tmpfs) cannot be sealed, so names never reach the server: a
  // region can never follow a name to a new object (issue 14 item 9).
  const std::string name = "/gpusort-test-named-" + std::to_string(getpid());
  UniqueFd named(shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600));
  ASSERT_TRUE(named.valid());
  shm_unlink(name.c_str());
  ASSERT_EQ(ftruncate(named.get(), 4096), 0);
  EXPECT_EQ(fcntl(named.get(), F_ADD_SEALS, F_SEAL_SHRINK), -1) << "tmpfs files were expected to refuse seals";
  EXPECT_EQ(RegisterCode(server, named.get(), 4096, &why), absl::StatusCode::kFailedPrecondition);

  // Read-only: the server would write answers into memory the caller may only read.
  UniqueFd read_only(open(("/proc/self/fd/" + std::to_string(good.get())).c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(read_only.valid());
  EXPECT_EQ(RegisterCode(server, read_only.get(), 4096, &why), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(why, HasSubstr("reading and writing"));

  // Sealed against writing: the server could not write answers.
  UniqueFd write_sealed = Memfd(4096, F_SEAL_SHRINK | F_SEAL_WRITE);
  ASSERT_TRUE(write_sealed.valid());
  EXPECT_EQ(RegisterCode(server, write_sealed.get(), 4096, &why), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(why, HasSubstr("writing"));

  // Too small, or nothing.
  UniqueFd small = Memfd(4096);
  EXPECT_EQ(RegisterCode(server, small.get(), 4097, &why), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(why, HasSubstr("fewer than"));
  EXPECT_EQ(RegisterCode(server, small.get(), 0, &why), absl::StatusCode::kInvalidArgument);

  // Not shared memory at all: a pipe, a socket, a file on disk.
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd pipe_read(pipe_fds[0]), pipe_write(pipe_fds[1]);
  EXPECT_EQ(RegisterCode(server, pipe_write.get(), 4096, &why), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(why, HasSubstr("not shared memory"));
  UniqueFd a_socket(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(RegisterCode(server, a_socket.get(), 4096, &why), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(why, HasSubstr("not shared memory"));
  const std::string disk = DiskDirectory();
  if (!disk.empty()) {
    const std::string path = disk + "/gpusort-test-file-" + std::to_string(getpid());
    UniqueFd file(open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    ASSERT_TRUE(file.valid()) << path;
    unlink(path.c_str());
    ASSERT_EQ(ftruncate(file.get(), 4096), 0);
    EXPECT_EQ(RegisterCode(server, file.get(), 4096, &why), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(why, HasSubstr("not shared memory"));
  } else {
    ADD_FAILURE() << "no disk file system to make a regular file on";
  }

  // hugetlbfs: a huge page that cannot be had at first touch is SIGBUS. Only where the kernel makes one.
  UniqueFd huge = Memfd(2 << 20, F_SEAL_SHRINK, MFD_HUGETLB);
  if (huge.valid()) {
    EXPECT_EQ(RegisterCode(server, huge.get(), 2 << 20, &why), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(why, HasSubstr("hugetlbfs"));
  } else {
    std::printf("(no sealable hugetlb memfd on this kernel: that case is not exercised)\n");
  }

  ExpectStillServing(server);
}

TEST(SharedMemoryRegistration, MalformedRecordsAreRefusedAndEveryDescriptorClosed) {
  TestServer server(ShmConfig());
  UniqueFd memory = Memfd(4096);
  namespace wire = v1::region_socket;
  auto refused = [&](const std::vector<std::byte>& bytes, const std::vector<int>& fds, absl::StatusCode want,
                     const std::string& text) {
    UniqueFd connection = ConnectTo(server.shm_socket());
    ASSERT_TRUE(connection.valid());
    auto reply = SendRaw(connection.get(), bytes, fds);
    ASSERT_TRUE(reply.has_value()) << "no reply for: " << text;
    EXPECT_EQ(reply->code, static_cast<uint32_t>(want)) << reply->text;
    EXPECT_THAT(reply->text, HasSubstr(text));
  };
  std::vector<std::byte> wrong_magic = RequestRecord({.size = 4096});
  wrong_magic[0] = std::byte{'X'};
  refused(wrong_magic, {memory.get()}, absl::StatusCode::kInvalidArgument, "GSRQ");
  refused(RequestRecord({.version = 2, .size = 4096}), {memory.get()}, absl::StatusCode::kInvalidArgument, "version 2");
  refused(RequestRecord({.kind = 3, .size = 4096}), {memory.get()}, absl::StatusCode::kUnimplemented, "kind 3");
  // Kind 2 is device memory: a CPU server has none, and a GPU server finds a memfd is not device memory.
  if (TestingCuda()) {
    refused(RequestRecord({.kind = 2, .size = 4096}), {memory.get()}, absl::StatusCode::kInvalidArgument,
            "not CUDA device memory");
  } else {
    refused(RequestRecord({.kind = 2, .size = 4096}), {memory.get()}, absl::StatusCode::kFailedPrecondition,
            "device regions need a GPU server");
  }
  std::vector<std::byte> reserved = RequestRecord({.size = 4096});
  reserved[20] = std::byte{1};
  refused(reserved, {memory.get()}, absl::StatusCode::kInvalidArgument, "reserved");
  std::vector<std::byte> short_record = RequestRecord({.size = 4096});
  short_record.resize(16);
  refused(short_record, {memory.get()}, absl::StatusCode::kInvalidArgument, "32-byte record");
  std::vector<std::byte> long_record = RequestRecord({.size = 4096});
  long_record.resize(64);
  refused(long_record, {memory.get()}, absl::StatusCode::kInvalidArgument, "32-byte record");
  refused(RequestRecord({.size = 4096}), {}, absl::StatusCode::kInvalidArgument, "exactly one descriptor");

  // Two descriptors: refused, and the server closes both. Its copy of a pipe's write end is the last
  // one once the test closes its own, so the read end sees end-of-file only when the server let go.
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd pipe_read(pipe_fds[0]), pipe_write(pipe_fds[1]);
  refused(RequestRecord({.size = 4096}), {memory.get(), pipe_write.get()}, absl::StatusCode::kInvalidArgument,
          "carried 2");
  pipe_write.reset();
  pollfd p{pipe_read.get(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1) << "the server still holds a descriptor it refused";
  char byte;
  EXPECT_EQ(read(pipe_read.get(), &byte, 1), 0);

  ExpectStillServing(server);
}

TEST(SharedMemoryRegistration, TheRetiredRegisterRegionRpcOpensNothing) {
  TestServer server(ShmConfig());
  const std::string name = "/gpusort-test-rpc-" + std::to_string(getpid());
  UniqueFd object(shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600));
  ASSERT_TRUE(object.valid());
  ASSERT_EQ(ftruncate(object.get(), 4096), 0);
  grpc::ClientContext context;
  v1::RegisterRegionRequest request;
  request.set_name(name);
  request.set_size(4096);
  auto reader = server.stub().RegisterRegion(&context, request);
  v1::RegisterRegionEvent event;
  EXPECT_FALSE(reader->Read(&event)) << "a region id came back: " << event.region_id();
  const grpc::Status status = reader->Finish();
  shm_unlink(name.c_str());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr(server.shm_socket()));
}

TEST(SharedMemoryRegistration, ARegionLivesAsLongAsItsConnection) {
  TestServer server(ShmConfig());
  Client client = ShmClientFor(server);
  UniqueFd memory = Memfd(4096);
  auto* data = static_cast<uint32_t*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, memory.get(), 0));
  ASSERT_NE(data, MAP_FAILED);
  for (uint32_t i = 0; i < 1024; ++i) data[i] = 1023 - i;
  auto registration = SharedMemoryRegistration::Register(server.shm_socket(), memory.get(), 4096);
  ASSERT_TRUE(registration.ok()) << registration.status();
  const client::RegionRef ref = (*registration)->Ref(0, 4096);
  SortOptions o;
  o.algorithm = ClientTestAlgorithm();
  auto sorted = client.SortInRegion(client::DType::kUint32, o, client::Payload::kNone, ref, ref);
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  for (uint32_t i = 0; i < 1024; ++i) ASSERT_EQ(data[i], i);

  // Anything sent after the registration breaks the protocol: the server closes the connection, and
  // the region goes with it.
  const int connection = (*registration)->connection();
  auto extra = RequestRecord({.size = 4096});
  ASSERT_EQ(send(connection, extra.data(), extra.size(), MSG_NOSIGNAL), static_cast<ssize_t>(extra.size()));
  pollfd p{connection, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  char byte;
  EXPECT_EQ(recv(connection, &byte, 1, 0), 0) << "the server kept the connection";
  absl::Status gone;
  for (int i = 0; i < 100; ++i) {  // the unregistration is done by the time the close is seen; allow slack
    gone = client.SortInRegion(client::DType::kUint32, o, client::Payload::kNone, ref, ref).status();
    if (!gone.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(gone.code(), absl::StatusCode::kInvalidArgument) << gone;
  EXPECT_THAT(std::string(gone.message()), HasSubstr("not registered"));
  munmap(data, 4096);
}

TEST(SharedMemoryRegistration, IdleConnectionsAreClosedAndWaitingOnesCapped) {
  ServerConfig config = ShmConfig();
  config.shm_registration_timeout_seconds = 1;
  config.shm_max_pending = 2;
  TestServer server(config);
  const Clock::time_point start = Clock::now();
  UniqueFd first = ConnectTo(server.shm_socket());
  UniqueFd second = ConnectTo(server.shm_socket());
  ASSERT_TRUE(first.valid() && second.valid());
  // A third waiting connection is one too many: refused with a reply, then closed.
  UniqueFd third = ConnectTo(server.shm_socket());
  ASSERT_TRUE(third.valid());
  std::array<std::byte, v1::region_socket::kReplyBytes> record{};
  timeval timeout{5, 0};
  setsockopt(third.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  const ssize_t n = recv(third.get(), record.data(), record.size(), 0);
  ASSERT_EQ(n, static_cast<ssize_t>(record.size())) << "no refusal for the connection over --shm-max-pending";
  auto reply = v1::region_socket::DecodeReply(record);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->code, static_cast<uint32_t>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(reply->text, HasSubstr("--shm-max-pending"));
  // The client library reports that reason too (the server may have closed before the request went out).
  UniqueFd memory = Memfd(4096);
  std::string why;
  EXPECT_EQ(RegisterCode(server, memory.get(), 4096, &why), absl::StatusCode::kResourceExhausted) << why;
  EXPECT_THAT(why, HasSubstr("--shm-max-pending"));

  // The two that never send anything are closed once the registration timeout has passed.
  for (UniqueFd* idle : {&first, &second}) {
    pollfd p{idle->get(), POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 5000), 1) << "an idle connection was never closed";
    char byte;
    EXPECT_EQ(recv(idle->get(), &byte, 1, 0), 0);
  }
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_GE(waited, 0.95) << "closed before its registration timeout";
  EXPECT_LT(waited, 4.0);

  ExpectStillServing(server);
}

TEST(SharedMemoryRegistration, TheSocketFileIsReplacedOnlyWhenStaleAndRemovedAtShutdown) {
  ServerConfig config = ShmConfig();
  const std::string path = config.shm_socket;
  {
    std::ofstream(path) << "not a socket";
    auto refused = GpusortServer::Start(config, MakeTestBackend());
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
    struct stat st {};
    ASSERT_EQ(lstat(path.c_str(), &st), 0) << "the file was removed";
    EXPECT_TRUE(S_ISREG(st.st_mode));
    unlink(path.c_str());
  }
  {
    // A socket left behind by a server that is gone: nobody listens on it any more.
    UniqueFd stale(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.data(), path.size());
    ASSERT_EQ(bind(stale.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  }
  {
    TestServer server(config);
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0666u);
    ExpectStillServing(server);
    auto second = GpusortServer::Start(config, MakeTestBackend());
    ASSERT_FALSE(second.ok()) << "two servers on one socket";
    EXPECT_THAT(std::string(second.status().message()), HasSubstr("in use"));
    ExpectStillServing(server);
  }
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "the socket file outlived its server";

  config.shm_max_regions = 0;
  auto contradiction = GpusortServer::Start(config, MakeTestBackend());
  ASSERT_FALSE(contradiction.ok());
  EXPECT_EQ(contradiction.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpusort::testing
