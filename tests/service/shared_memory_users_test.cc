// Two local users and one server (issue 14 item 3, the confused deputy): a second user (nobody, uid
// 65534) has no way to hand the server another user's memory, because registering takes a descriptor
// the user must have opened read-write itself; it registers its own memory fine; and each user's
// share of the regions is its own. Needs root, to become the second user (CI runs as root).
#include <grp.h>
#include <sys/wait.h>

#include <cerrno>
#include <thread>

#include "tests/service/shm_test_support.h"

namespace gpusort::testing {
namespace {

using ::testing::HasSubstr;

constexpr uid_t kNobody = 65534;

// Runs `body` in a child process as uid/gid kNobody and returns what it wrote to `report` (one line per
// failed check; empty when all held), or why the child could not run. The child touches no gRPC (it is a
// fork of a process with gRPC threads): plain system calls and the socket registration only.
template <typename Body>
std::string AsNobody(Body body) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return "pipe failed";
  const pid_t child = fork();
  if (child < 0) return "fork failed";
  if (child == 0) {
    // Only the report pipe goes along: every other descriptor of this process (the victim's included)
    // would be authority the second user was simply handed.
    if (dup2(pipe_fds[1], 3) != 3) _exit(1);
    close_range(4, ~0U, 0);
    std::string report;
    if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0 || getuid() != kNobody) {
      report = "could not become uid 65534\n";
    } else {
      body(report);
    }
    (void)!write(3, report.data(), report.size());
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string report;
  char buffer[512];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0;) {
    report.append(buffer, static_cast<std::size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    report += "the child died (status " + std::to_string(status) + ")\n";
  }
  return report;
}

void Check(std::string& report, bool ok, const std::string& what) {
  if (!ok) report += what + "\n";
}

class SharedMemoryUsers : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root, to run part of the test as a second user (uid 65534)";
  }
};

TEST_F(SharedMemoryUsers, ASecondUserCannotHandTheServerAnotherUsersMemory) {
  ServerConfig config = ShmConfig();
  TestServer server(config);
  const std::string socket = server.shm_socket();

  // The victim (root): a private named object, a private memfd, and a world-readable named object.
  const std::string secret_name = "/gpusort-test-secret-" + std::to_string(getpid());
  const std::string public_name = "/gpusort-test-public-" + std::to_string(getpid());
  UniqueFd secret(shm_open(secret_name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600));
  UniqueFd readable(shm_open(public_name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0644));
  ASSERT_TRUE(secret.valid() && readable.valid());
  ASSERT_EQ(fchmod(readable.get(), 0644), 0);  // whatever the umask
  ASSERT_EQ(ftruncate(secret.get(), 4096), 0);
  ASSERT_EQ(ftruncate(readable.get(), 4096), 0);
  ASSERT_EQ(pwrite(secret.get(), "secret", 6, 0), 6);
  UniqueFd private_memfd = Memfd(4096);
  ASSERT_TRUE(private_memfd.valid());
  const std::string memfd_path = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(private_memfd.get());

  const std::string report = AsNobody([&](std::string& r) {
    // No descriptor for the victim's memory, read-write or at all.
    errno = 0;
    Check(r, shm_open(secret_name.c_str(), O_RDWR, 0) < 0 && errno == EACCES, "opened the 0600 object read-write");
    Check(r, shm_open(secret_name.c_str(), O_RDONLY, 0) < 0 && errno == EACCES, "opened the 0600 object read-only");
    errno = 0;
    Check(r, open(memfd_path.c_str(), O_RDWR) < 0 && errno == EACCES, "opened root's memfd through /proc");
    // A world-readable object: readable, never writable, and the server takes no read-only descriptor.
    Check(r, shm_open(public_name.c_str(), O_RDWR, 0) < 0, "opened the 0644 object read-write");
    const int read_only = shm_open(public_name.c_str(), O_RDONLY, 0);
    Check(r, read_only >= 0, "could not open the 0644 object read-only");
    if (read_only >= 0) {
      auto refused = SharedMemoryRegistration::Register(socket, read_only, 4096, std::chrono::seconds(20));
      Check(r, refused.status().code() == absl::StatusCode::kPermissionDenied,
            "a read-only descriptor was answered " + refused.status().ToString());
      close(read_only);
    }
    // Its own memory registers fine.
    UniqueFd own = Memfd(4096);
    auto mine = SharedMemoryRegistration::Register(socket, own.get(), 4096, std::chrono::seconds(20));
    Check(r, mine.ok(), "its own memfd was refused: " + mine.status().ToString());
  });
  EXPECT_EQ(report, "");

  // And the retired name-based RPC, which a server running as root once honoured with its own rights,
  // opens nothing for the victim's name.
  grpc::ClientContext context;
  v1::RegisterRegionRequest request;
  request.set_name(secret_name);
  request.set_size(4096);
  auto reader = server.stub().RegisterRegion(&context, request);
  v1::RegisterRegionEvent event;
  EXPECT_FALSE(reader->Read(&event));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  char bytes[6] = {};
  ASSERT_EQ(pread(secret.get(), bytes, 6, 0), 6);
  EXPECT_EQ(std::string(bytes, 6), "secret");
  shm_unlink(secret_name.c_str());
  shm_unlink(public_name.c_str());
}

TEST_F(SharedMemoryUsers, EachUserHasItsOwnShareOfTheRegions) {
  ServerConfig config = ShmConfig();
  config.shm_max_regions = 8;
  config.shm_max_regions_per_user = 2;
  config.shm_max_bytes_per_user = 1 << 20;
  TestServer server(config);
  const std::string socket = server.shm_socket();
  Client client = ShmClientFor(server);

  // Root takes its two regions; a third is refused, naming the per-user limit, and so is one that would
  // pass its bytes.
  auto first = client.CreateSharedMemory(1 << 19);
  auto second = client.CreateSharedMemory(4096);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_CODE(client.CreateSharedMemory(4096), kResourceExhausted, "--shm-max-regions-per-user");
  second->reset();
  for (int i = 0; i < 100; ++i) {  // until the server has seen the second one's end
    auto too_big = client.CreateSharedMemory((1 << 19) + 4096);
    const std::string why(too_big.status().message());
    if (!too_big.ok() && why.find("--shm-max-bytes-per-user") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_LT(i, 99) << "the per-user byte limit never applied";
  }
  auto again = client.CreateSharedMemory(4096);
  ASSERT_TRUE(again.ok()) << again.status();

  // While root is at its limit, nobody registers its own two, and its third is refused in turn.
  const std::string report = AsNobody([&](std::string& r) {
    UniqueFd a = Memfd(4096), b = Memfd(4096), c = Memfd(4096);
    auto one = SharedMemoryRegistration::Register(socket, a.get(), 4096, std::chrono::seconds(20));
    auto two = SharedMemoryRegistration::Register(socket, b.get(), 4096, std::chrono::seconds(20));
    auto three = SharedMemoryRegistration::Register(socket, c.get(), 4096, std::chrono::seconds(20));
    Check(r, one.ok() && two.ok(), "user 65534 was refused while under its share: " + one.status().ToString() + " " +
                                       two.status().ToString());
    Check(r, three.status().code() == absl::StatusCode::kResourceExhausted &&
                 std::string(three.status().message()).find("user 65534") != std::string::npos,
          "user 65534's third region was answered " + three.status().ToString());
  });
  EXPECT_EQ(report, "");
  EXPECT_CODE(client.CreateSharedMemory(4096), kResourceExhausted, "user 0");
}

}  // namespace
}  // namespace gpusort::testing
