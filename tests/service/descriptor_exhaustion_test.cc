// Running out of descriptors (issue 41). A peer that opens idle connections until the process can hold
// no more made gRPC 1.51's accept loop give up for good (grpc/grpc#20418) while health said SERVING, and
// made the data port's listener spin a core logging. Each test runs the server in this process under a
// low RLIMIT_NOFILE, uses up the rest of the descriptors itself, and checks what the server does while
// none is left and after they come back. Each runs in a process of its own (ctest runs tests one by one).
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "server/core/unique_fd.h"
#include "tests/service/health_check.h"
#include "tests/service/test_server.h"

namespace gpusort::testing {
namespace {

using Clock = std::chrono::steady_clock;

// UBSan's vptr check finds out whether memory is readable by writing it into a pipe (sanitizer_common's
// IsAccessibleMemoryRange): with no descriptor left it cannot, and it reports the first virtual call it
// checks (fmt's buffer, in a log line) as an object with an invalid vptr. The ASan+UBSan build skips these
// tests for that; the plain build and ThreadSanitizer's run them.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizerNeedsDescriptors = true;
#else
constexpr bool kSanitizerNeedsDescriptors = false;
#endif
#define SKIP_WHERE_THE_SANITIZER_NEEDS_DESCRIPTORS()                                                  \
  if (kSanitizerNeedsDescriptors) GTEST_SKIP() << "UBSan's vptr check needs a descriptor of its own"

// The highest descriptor number open in this process.
int HighestOpenDescriptor() {
  int highest = 0;
  DIR* dir = opendir("/proc/self/fd");
  for (dirent* e; dir != nullptr && (e = readdir(dir)) != nullptr;) highest = std::max(highest, std::atoi(e->d_name));
  if (dir != nullptr) closedir(dir);
  return highest;
}

// Lowers the soft descriptor limit for its lifetime to `room` above the highest descriptor open now.
class LowDescriptorLimit {
 public:
  explicit LowDescriptorLimit(int room) {
    getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit low = saved_;
    low.rlim_cur = static_cast<rlim_t>(HighestOpenDescriptor() + 1 + room);
    ok_ = setrlimit(RLIMIT_NOFILE, &low) == 0;
  }
  ~LowDescriptorLimit() { setrlimit(RLIMIT_NOFILE, &saved_); }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

// A non-blocking TCP connection to 127.0.0.1:`port` (invalid when no descriptor is left for it).
UniqueFd ConnectTo(int port) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fd;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  (void)connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address));
  return fd;
}

// Every descriptor left, taken: connections to `port` while a socket can be had (each the server takes
// costs it one more), then copies of /dev/null. `spare` sockets are made first, unconnected, so that the
// test can still connect somewhere once nothing is left.
struct EveryDescriptor {
  std::vector<UniqueFd> held;
  std::vector<UniqueFd> spare;

  EveryDescriptor(int port, int spares) {
    for (int i = 0; i < spares; ++i) spare.emplace_back(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    for (int i = 0; i < 4096; ++i) {
      UniqueFd fd = port > 0 ? ConnectTo(port) : UniqueFd();
      if (!fd.valid()) break;
      held.push_back(std::move(fd));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the server accepts as they come
    }
    for (;;) {
      UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
      if (!fd.valid()) break;
      held.push_back(std::move(fd));
    }
  }
  void Release() {
    held.clear();
    spare.clear();
  }
};

bool ConnectSpare(UniqueFd& fd, int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 || errno == EINPROGRESS;
}

HealthStatus::ServingStatus WaitForHealth(const std::shared_ptr<grpc::Channel>& channel,
                                          HealthStatus::ServingStatus want, std::chrono::seconds within) {
  const auto end = Clock::now() + within;
  HealthStatus::ServingStatus now = CheckHealth(channel, "");
  while (now != want && Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    now = CheckHealth(channel, "");
  }
  return now;
}

grpc::Status SortOnNewConnection(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt("gpusort.test.unique", static_cast<int>(Clock::now().time_since_epoch().count() & 0x7fffffff));
  auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  auto stub = v1::SortService::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  context.set_wait_for_ready(true);
  v1::SortRequest request;
  *request.mutable_options() = TestSortOptions(v1::DTYPE_UINT32);
  request.set_keys(ToBytes(std::vector<uint32_t>{3, 1, 2}));
  v1::SortResponse response;
  grpc::Status status = stub->Sort(&context, request, &response);
  if (status.ok() && response.keys() != ToBytes(std::vector<uint32_t>{1, 2, 3})) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "wrong answer");
  }
  return status;
}

TEST(DescriptorExhaustion, TheGrpcPortAcceptsAgainAndHealthSaysWhenItCannot) {
  SKIP_WHERE_THE_SANITIZER_NEEDS_DESCRIPTORS();
  ServerConfig config = LoopbackConfig();
  config.health_listen = "127.0.0.1:0";
  TestServer server(config);
  const int port = server.server().grpc_port();
  auto health = grpc::CreateChannel("127.0.0.1:" + std::to_string(server.server().health_port()),
                                    grpc::InsecureChannelCredentials());
  ASSERT_EQ(CheckHealth(health, ""), HealthStatus::SERVING);  // connected now, before nothing is left
  ASSERT_TRUE(SortOnNewConnection(server.address()).ok());

  {
    LowDescriptorLimit limit(256);
    ASSERT_TRUE(limit.ok());
    EveryDescriptor all(port, 4);
    ASSERT_GT(all.held.size(), 10u);
    // Connections that come now find no descriptor for the server to accept them with.
    for (UniqueFd& fd : all.spare) ASSERT_TRUE(ConnectSpare(fd, port));
    EXPECT_EQ(WaitForHealth(health, HealthStatus::NOT_SERVING, std::chrono::seconds(10)), HealthStatus::NOT_SERVING)
        << "health said SERVING while the gRPC port could accept nothing";
    all.Release();
    EXPECT_EQ(WaitForHealth(health, HealthStatus::SERVING, std::chrono::seconds(10)), HealthStatus::SERVING)
        << "health did not come back once descriptors did";
  }
  // The port accepts again: gRPC 1.51's accept loop alone would have ended at the first EMFILE.
  const grpc::Status after = SortOnNewConnection(server.address());
  EXPECT_TRUE(after.ok()) << after.error_code() << " " << after.error_message();
}

// The CPU time this process's threads have used, in seconds (getrusage: no descriptor needed).
double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// With a connection waiting on each listener and no descriptor to take it with, no listener spins: the
// data port's woke at once forever (a core, and 58 MiB/s of log lines); civetweb's (metrics) the same.
TEST(DescriptorExhaustion, NoListenerSpinsWhileNoDescriptorIsLeft) {
  SKIP_WHERE_THE_SANITIZER_NEEDS_DESCRIPTORS();
  ServerConfig config = ShmConfig();
  config.data_port = 0;
  config.metrics_listen = "127.0.0.1:0";
  config.health_listen = "127.0.0.1:0";
  TestServer server(config);
  const int ports[] = {server.server().grpc_port(), server.server().data_port(), server.server().metrics_port(),
                       server.server().health_port()};
  {
    LowDescriptorLimit limit(64);
    ASSERT_TRUE(limit.ok());
    EveryDescriptor all(0, 4);
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(ConnectSpare(all.spare[static_cast<std::size_t>(i)], ports[i]));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // each listener has tried by now
    const double before = ProcessCpuSeconds();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const double used = ProcessCpuSeconds() - before;
    EXPECT_LT(used, 0.5) << "the process used " << used << " s of CPU in 2 s while idle but for the waiting connections";
    all.Release();
  }
  EXPECT_TRUE(SortOnNewConnection(server.address()).ok());
}

}  // namespace
}  // namespace gpusort::testing
