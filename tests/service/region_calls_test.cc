// Calls on the shared-memory socket (sort.proto, "Calls on the shared-memory socket"), spoken record by
// record against a real in-process server (either backend, GPUSORT_TEST_BACKEND): answers match the
// references and carry info; calls on one connection are answered in order; every broken record gets
// its status (and a closed connection where the format broke); tokens, the connection limits, the idle
// close and a vanishing caller behave as the proto says; and the client library really uses the socket.
#include <poll.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "client/src/region_call_connections.h"
#include "gpusort/v1/region_calls.h"
#include "tests/service/scripted_backend.h"
#include "tests/service/shm_test_support.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

namespace wire = v1::region_calls;

// Sends one record on `fd` (with `fds` attached when given).
bool SendRecord(int fd, const std::vector<std::byte>& record) {
  return send(fd, record.data(), record.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(record.size());
}

// The next answer on `fd` (nullopt: none within 20 s, the connection ended, or not an answer record).
std::optional<wire::Answer> ReadAnswer(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 20'000) <= 0) return std::nullopt;
  std::vector<std::byte> buffer(wire::kMaxAnswerBytes);
  const ssize_t n = recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
  if (n <= 0) return std::nullopt;
  buffer.resize(static_cast<std::size_t>(n));
  return wire::DecodeAnswer(buffer);
}

// Whether the server closed `fd` (end of file within 5 s).
bool ClosedByServer(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 5000) <= 0) return false;
  char byte;
  return recv(fd, &byte, 1, MSG_DONTWAIT) == 0;
}

wire::Call SortCall(const v1::SortRequest& request, std::string token = {}) {
  return {.method = static_cast<std::uint16_t>(wire::Method::kSort),
          .token = std::move(token),
          .request = request.SerializeAsString()};
}

v1::SortRequest SortInPlace(const SharedMemoryRegion& r, std::size_t bytes, bool descending = false) {
  v1::SortRequest request;
  request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  request.mutable_options()->set_order(descending ? v1::ORDER_DESCENDING : v1::ORDER_ASCENDING);
  request.mutable_options()->set_algorithm(TestAlgorithm());
  *request.mutable_keys_region() = WireRef(r.Ref(0, bytes));
  *request.mutable_output_region() = WireRef(r.Ref(0, bytes));
  return request;
}

struct ServerWithRegion {
  explicit ServerWithRegion(ServerConfig config = ShmConfig()) : server(config) {
    ClientOptions options;
    options.target = server.address();
    options.shm_socket = server.shm_socket();
    client = std::make_unique<Client>(options);
    auto made = client->CreateSharedMemory(1 << 20);
    EXPECT_TRUE(made.ok()) << made.status();
    if (made.ok()) region = *std::move(made);
  }
  TestServer server;
  std::unique_ptr<Client> client;
  std::unique_ptr<SharedMemoryRegion> region;
};

TEST(RegionCalls, SortAndTopKRecordsAreAnsweredInOrderOnOneConnection) {
  ServerWithRegion s;
  ASSERT_NE(s.region, nullptr);
  const auto keys = MakeInput<uint32_t>(Pattern::kRandom, 50001, 7);
  const std::size_t bytes = keys.size() * 4;
  Put(*s.region, 0, keys);
  UniqueFd fd = ConnectTo(s.server.shm_socket());
  ASSERT_TRUE(fd.valid());

  wire::Call sort = SortCall(SortInPlace(*s.region, bytes, /*descending=*/true));
  sort.request_id = "region-call-1";
  v1::TopKRequest top;
  top.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  top.mutable_options()->set_k(10);
  top.mutable_options()->set_largest(true);
  top.mutable_options()->set_sorted(true);
  *top.mutable_keys_region() = WireRef(s.region->Ref(0, bytes));
  *top.mutable_values_region() = WireRef(s.region->Ref(bytes, 40));
  const std::size_t index_offset = (bytes + 40 + 7) / 8 * 8;
  *top.mutable_indices_region() = WireRef(s.region->Ref(index_offset, 80));
  // Both sent before either is read: the second runs after the first (on the sorted keys).
  ASSERT_TRUE(SendRecord(fd.get(), wire::EncodeCall(sort)));
  ASSERT_TRUE(SendRecord(fd.get(), wire::EncodeCall({.method = 2, .request = top.SerializeAsString()})));

  auto first = ReadAnswer(fd.get());
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->code, 0u) << first->message;
  v1::SortResponse sorted;
  ASSERT_TRUE(sorted.ParseFromString(first->response));
  EXPECT_EQ(sorted.info().request_id(), "region-call-1");
  EXPECT_EQ(sorted.info().backend(), ExpectedBackend());
  EXPECT_EQ(Get<uint32_t>(*s.region, 0, keys.size()), ReferenceSort(keys, SortOrder::kDescending));

  auto second = ReadAnswer(fd.get());
  ASSERT_TRUE(second.has_value());
  ASSERT_EQ(second->code, 0u) << second->message;
  v1::TopKResponse topk;
  ASSERT_TRUE(topk.ParseFromString(second->response));
  EXPECT_TRUE(topk.has_info());
  const auto want = ReferenceTopK(keys, 1, 10, true);
  EXPECT_EQ(Get<uint32_t>(*s.region, bytes, 10), want.values);
  const auto positions = Get<int64_t>(*s.region, index_offset, 10);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(positions[i], i) << "the keys were sorted descending by the first call";
}

TEST(RegionCalls, BrokenRecordsAreRefusedAndCloseTheConnection) {
  ServerWithRegion s;
  ASSERT_NE(s.region, nullptr);
  const auto good = wire::EncodeCall(SortCall(SortInPlace(*s.region, 400)));
  const auto expect_closed = [&](std::vector<std::byte> record, const std::string& text) {
    UniqueFd fd = ConnectTo(s.server.shm_socket());
    ASSERT_TRUE(SendRecord(fd.get(), record));
    auto answer = ReadAnswer(fd.get());
    ASSERT_TRUE(answer.has_value()) << text;
    EXPECT_EQ(answer->code, static_cast<std::uint32_t>(absl::StatusCode::kInvalidArgument)) << text;
    EXPECT_THAT(answer->message, ::testing::HasSubstr(text));
    EXPECT_TRUE(ClosedByServer(fd.get())) << text;
  };
  std::vector<std::byte> short_by_one(good.begin(), good.end() - 1);
  expect_closed(short_by_one, "not a call record");
  std::vector<std::byte> long_by_one = good;
  long_by_one.push_back(std::byte{0});
  expect_closed(long_by_one, "not a call record");
  std::vector<std::byte> version = good;
  version[4] = std::byte{2};
  expect_closed(version, "version 2");
  std::vector<std::byte> reserved = good;
  reserved[27] = std::byte{1};
  expect_closed(reserved, "reserved");
  std::vector<std::byte> huge(wire::kMaxCallBytes + 100);
  std::copy(good.begin(), good.begin() + 4, huge.begin());
  expect_closed(huge, "");

  // A record with a descriptor attached, on a calls connection (after a good first call).
  UniqueFd fd = ConnectTo(s.server.shm_socket());
  ASSERT_TRUE(SendRecord(fd.get(), good));
  ASSERT_TRUE(ReadAnswer(fd.get()).has_value());
  UniqueFd memfd = Memfd(4096);
  auto refused = SendRaw(fd.get(), good, {memfd.get()});  // reads a registration-sized reply: none fits
  (void)refused;
  EXPECT_TRUE(ClosedByServer(fd.get()));
}

TEST(RegionCalls, BadRequestsAreAnsweredAndTheConnectionServesOn) {
  ServerWithRegion s;
  ASSERT_NE(s.region, nullptr);
  UniqueFd fd = ConnectTo(s.server.shm_socket());
  const auto ask = [&](const wire::Call& call) {
    EXPECT_TRUE(SendRecord(fd.get(), wire::EncodeCall(call)));
    return ReadAnswer(fd.get());
  };
  auto unknown = ask({.method = 3, .request = ""});
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->code, static_cast<std::uint32_t>(absl::StatusCode::kUnimplemented));
  auto junk = ask({.method = 1, .request = "\xff\xff\xff"});
  ASSERT_TRUE(junk.has_value());
  EXPECT_EQ(junk->code, static_cast<std::uint32_t>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(junk->message, ::testing::HasSubstr("not a SortRequest"));
  v1::SortRequest inline_keys;
  inline_keys.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  inline_keys.set_keys(std::string(8, '\1'));
  auto carried = ask(SortCall(inline_keys));
  ASSERT_TRUE(carried.has_value());
  EXPECT_EQ(carried->code, static_cast<std::uint32_t>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(carried->message, ::testing::HasSubstr("keys_region"));
  v1::SortRequest past_end = SortInPlace(*s.region, 400);
  past_end.mutable_keys_region()->set_offset(s.region->size());
  auto outside = ask(SortCall(past_end));
  ASSERT_TRUE(outside.has_value());
  EXPECT_EQ(outside->code, static_cast<std::uint32_t>(absl::StatusCode::kInvalidArgument));
  // Still serving.
  Put(*s.region, 0, std::vector<uint32_t>{3, 1, 2});
  auto fine = ask(SortCall(SortInPlace(*s.region, 12)));
  ASSERT_TRUE(fine.has_value());
  EXPECT_EQ(fine->code, 0u) << fine->message;
  EXPECT_EQ(Get<uint32_t>(*s.region, 0, 3), (std::vector<uint32_t>{1, 2, 3}));
}

TEST(RegionCalls, TokensAreAskedAsOverGrpc) {
  const std::string tokens = TestShmSocketPath() + ".tokens";
  std::ofstream(tokens) << "right-token\n";
  ServerConfig config = ShmConfig();
  config.auth_tokens_file = tokens;
  TestServer server(config);
  // Registration needs no token; the calls do.
  auto region = SharedMemoryRegion::Create(server.shm_socket(), 4096, std::chrono::seconds(20));
  ASSERT_TRUE(region.ok()) << region.status();
  Put(**region, 0, std::vector<uint32_t>{3, 1, 2});
  UniqueFd fd = ConnectTo(server.shm_socket());
  const auto code_with = [&](std::string token) {
    EXPECT_TRUE(SendRecord(fd.get(), wire::EncodeCall(SortCall(SortInPlace(**region, 12), token))));
    auto answer = ReadAnswer(fd.get());
    return answer.has_value() ? static_cast<absl::StatusCode>(answer->code) : absl::StatusCode::kUnknown;
  };
  EXPECT_EQ(code_with(""), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(code_with("wrong-token"), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Get<uint32_t>(**region, 0, 3), (std::vector<uint32_t>{3, 1, 2})) << "a refused call ran";
  EXPECT_EQ(code_with("right-token"), absl::StatusCode::kOk);
  EXPECT_EQ(Get<uint32_t>(**region, 0, 3), (std::vector<uint32_t>{1, 2, 3}));
  std::remove(tokens.c_str());
}

TEST(RegionCalls, ConnectionsPastTheLimitsAreRefusedWithoutRunning) {
  ServerConfig config = ShmConfig();
  config.shm_max_call_connections_per_user = 2;
  ServerWithRegion s(config);
  ASSERT_NE(s.region, nullptr);
  Put(*s.region, 0, std::vector<uint32_t>{3, 1, 2});
  const auto record = wire::EncodeCall(SortCall(SortInPlace(*s.region, 12)));
  std::vector<UniqueFd> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(ConnectTo(s.server.shm_socket()));
    ASSERT_TRUE(SendRecord(held.back().get(), record));
    auto answer = ReadAnswer(held.back().get());
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(answer->code, 0u) << answer->message;
  }
  UniqueFd third = ConnectTo(s.server.shm_socket());
  ASSERT_TRUE(SendRecord(third.get(), record));
  auto refused = ReadAnswer(third.get());
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->code, static_cast<std::uint32_t>(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(refused->flags & wire::kFlagClosedNotRun, wire::kFlagClosedNotRun);
  EXPECT_THAT(refused->message, ::testing::HasSubstr("--shm-max-call-connections-per-user"));
  EXPECT_TRUE(ClosedByServer(third.get()));
  // One closed frees its slot.
  held.pop_back();
  bool served = false;
  for (int attempt = 0; attempt < 100 && !served; ++attempt) {  // the server notices the close on its own
    UniqueFd again = ConnectTo(s.server.shm_socket());
    ASSERT_TRUE(SendRecord(again.get(), record));
    auto answer = ReadAnswer(again.get());
    served = answer.has_value() && answer->code == 0;
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(served);
}

TEST(RegionCalls, AnIdleConnectionIsClosedAndTheClientCarriesOn) {
  ServerConfig config = ShmConfig();
  config.shm_call_idle_timeout_seconds = 0.2;
  ServerWithRegion s(config);
  ASSERT_NE(s.region, nullptr);
  Put(*s.region, 0, std::vector<uint32_t>{3, 1, 2});
  UniqueFd fd = ConnectTo(s.server.shm_socket());
  const auto record = wire::EncodeCall(SortCall(SortInPlace(*s.region, 12)));
  ASSERT_TRUE(SendRecord(fd.get(), record));
  ASSERT_TRUE(ReadAnswer(fd.get()).has_value());
  EXPECT_TRUE(ClosedByServer(fd.get()));
  EXPECT_FALSE(SendRecord(fd.get(), record)) << "a send after the idle close must fail";

  // The library's kept connection goes the same way; its next call goes on a new one.
  Put(*s.region, 0, std::vector<uint32_t>{9, 8, 7});
  auto first = s.client->SortInRegion(client::DType::kUint32, {}, client::Payload::kNone, s.region->Ref(0, 12),
                                      s.region->Ref(0, 12));
  ASSERT_TRUE(first.ok()) << first.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  Put(*s.region, 0, std::vector<uint32_t>{6, 5, 4});
  auto after_idle = s.client->SortInRegion(client::DType::kUint32, {}, client::Payload::kNone, s.region->Ref(0, 12),
                                           s.region->Ref(0, 12));
  ASSERT_TRUE(after_idle.ok()) << after_idle.status();
  EXPECT_EQ(Get<uint32_t>(*s.region, 0, 3), (std::vector<uint32_t>{4, 5, 6}));
}

TEST(RegionCalls, ACallerThatHangsUpOrRunsOutOfTimeLeavesTheServerServing) {
  ServerWithRegion s;
  ASSERT_NE(s.region, nullptr);
  // Long enough to outlast a 1 ms deadline on either backend (the GPU sorts 16 MiB in about a
  // millisecond), short enough for the sanitizer builds' CPU engine.
  const std::size_t bytes = TestingCuda() ? std::size_t{64} << 20 : std::size_t{16} << 20;
  auto big = s.client->CreateSharedMemory(bytes);
  ASSERT_TRUE(big.ok()) << big.status();
  const auto keys = MakeInput<uint32_t>(Pattern::kRandom, bytes / 4, 11);
  Put(**big, 0, keys);
  const v1::SortRequest request = SortInPlace(**big, keys.size() * 4);
  {
    UniqueFd fd = ConnectTo(s.server.shm_socket());
    ASSERT_TRUE(SendRecord(fd.get(), wire::EncodeCall(SortCall(request))));
  }  // gone before the answer
  UniqueFd fd = ConnectTo(s.server.shm_socket());
  wire::Call hurried = SortCall(request);
  hurried.timeout_ms = 1;
  ASSERT_TRUE(SendRecord(fd.get(), wire::EncodeCall(hurried)));
  auto late = ReadAnswer(fd.get());
  ASSERT_TRUE(late.has_value());
  EXPECT_EQ(late->code, static_cast<std::uint32_t>(absl::StatusCode::kDeadlineExceeded)) << late->message;
  Put(*s.region, 0, std::vector<uint32_t>{3, 1, 2});
  ASSERT_TRUE(SendRecord(fd.get(), wire::EncodeCall(SortCall(SortInPlace(*s.region, 12)))));
  auto fine = ReadAnswer(fd.get());
  ASSERT_TRUE(fine.has_value());
  EXPECT_EQ(fine->code, 0u) << fine->message;
  EXPECT_EQ(Get<uint32_t>(*s.region, 0, 3), (std::vector<uint32_t>{1, 2, 3}));
}

// A caller that hangs up mid-call cancels the work, as a cancelled gRPC call does: the backend, held
// until cancelled, sees its cancellation within the watcher's reach, not only when the work ends.
TEST(RegionCalls, ACallerThatHangsUpCancelsItsCallWhileItRuns) {
  auto counters = std::make_shared<ScriptedBackend::Counters>();
  TestServer server(ShmConfig(), std::make_unique<ScriptedBackend>(counters));
  ClientOptions options;
  options.target = server.address();
  options.shm_socket = server.shm_socket();
  Client client(options);
  auto region = client.CreateSharedMemory(1 << 12);
  ASSERT_TRUE(region.ok()) << region.status();
  Put(**region, 0, std::vector<uint32_t>{3, 1, 2});
  v1::SortRequest request = SortInPlace(**region, 12);
  request.mutable_options()->set_algorithm(v1::ALGORITHM_AUTO);
  {
    UniqueFd fd = ConnectTo(server.shm_socket());
    ASSERT_TRUE(SendRecord(fd.get(), wire::EncodeCall(SortCall(request))));
    for (int i = 0; i < 5000 && counters->started.load() == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(counters->started.load(), 1);
  }  // hung up while the backend holds the call
  for (int i = 0; i < 5000 && counters->stopped_early.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(counters->stopped_early.load(), 1) << "the call ran on after its caller left";
  EXPECT_EQ(Get<uint32_t>(**region, 0, 3), (std::vector<uint32_t>{3, 1, 2})) << "a cancelled call wrote";
  counters->release = true;
  UniqueFd fd = ConnectTo(server.shm_socket());
  ASSERT_TRUE(SendRecord(fd.get(), wire::EncodeCall(SortCall(request))));
  auto fine = ReadAnswer(fd.get());
  ASSERT_TRUE(fine.has_value());
  EXPECT_EQ(fine->code, 0u) << fine->message;
  EXPECT_EQ(Get<uint32_t>(**region, 0, 3), (std::vector<uint32_t>{1, 2, 3}));
}

// Past the server's connection limit the library's calls go over gRPC: every one answered right.
TEST(RegionCalls, CallsPastTheConnectionLimitGoOverGrpcAndAreAllAnswered) {
  ServerConfig config = ShmConfig();
  config.shm_max_call_connections_per_user = 1;
  ServerWithRegion s(config);
  ASSERT_NE(s.region, nullptr);
  constexpr int kThreads = 4;
  constexpr std::size_t kKeys = 20000;
  std::vector<std::thread> threads;
  std::atomic<int> wrong = 0;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::size_t at = t * kKeys * 4;
      for (int i = 0; i < 20; ++i) {
        const auto keys = MakeInput<uint32_t>(Pattern::kRandom, kKeys, 100 * t + i);
        Put(*s.region, at, keys);
        auto info = s.client->SortInRegion(client::DType::kUint32, {}, client::Payload::kNone,
                                           s.region->Ref(at, kKeys * 4), s.region->Ref(at, kKeys * 4));
        if (!info.ok() || Get<uint32_t>(*s.region, at, kKeys) != ReferenceSort(keys, SortOrder::kAscending)) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// A server from before calls on the socket answers a call record as a broken registration and closes:
// the library then sends its region calls over gRPC, and stops trying the socket.
TEST(RegionCalls, AServerThatOnlyRegistersGetsTheCallsOverGrpc) {
  const std::string path = TestShmSocketPath() + ".old";
  UniqueFd listener(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  ASSERT_EQ(bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener.get(), 4), 0);
  std::atomic<int> connections = 0;
  std::thread old_server([&] {
    UniqueFd c(accept(listener.get(), nullptr, nullptr));
    ++connections;
    std::array<std::byte, 64> bytes{};
    (void)!recv(c.get(), bytes.data(), bytes.size(), 0);  // a 32-byte registration read: the call is cut
    const auto reply = v1::region_socket::EncodeReply(3, "not a registration request");
    (void)!send(c.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
  });
  client_internal::RegionCallConnections calls(path, std::chrono::microseconds(0));
  const client_internal::RegionCallConnections::Call call{
      .method = 1, .timeout = std::chrono::milliseconds(2000), .request = "x"};  // bounded, should it wait
  auto first = calls.Send(call);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->has_value()) << "the call must go over gRPC";
  old_server.join();
  auto second = calls.Send(call);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->has_value());
  EXPECT_EQ(connections.load(), 1) << "the socket was tried again";
  unlink(path.c_str());
}

// With the gRPC port unreachable, a region call succeeds only if it really went on the socket.
TEST(RegionCalls, TheClientLibrarySendsRegionCallsOnTheSocket) {
  TestServer server(ShmConfig());
  for (bool on_socket : {true, false}) {
    ClientOptions options;
    options.target = "127.0.0.1:1";  // nothing listens there
    options.shm_socket = server.shm_socket();
    options.shm_calls_on_socket = on_socket;
    options.timeout = std::chrono::milliseconds(2000);
    Client client(options);
    auto region = client.CreateSharedMemory(4096);
    ASSERT_TRUE(region.ok()) << region.status();
    Put(**region, 0, std::vector<uint32_t>{3, 1, 2});
    auto sorted = client.SortInRegion(client::DType::kUint32, {}, client::Payload::kNone, (*region)->Ref(0, 12),
                                      (*region)->Ref(0, 12));
    TopKOptions top;
    top.k = 1;
    top.output = client::TopKOutput::kValues;
    const client::RegionRef value = (*region)->Ref(16, 4);
    auto best = client.TopKInRegion(client::DType::kUint32, top, (*region)->Ref(0, 12), &value, nullptr);
    if (on_socket) {
      ASSERT_TRUE(sorted.ok()) << sorted.status();
      ASSERT_TRUE(best.ok()) << best.status();
      EXPECT_EQ(Get<uint32_t>(**region, 0, 3), (std::vector<uint32_t>{1, 2, 3}));
      EXPECT_EQ(Get<uint32_t>(**region, 16, 1), (std::vector<uint32_t>{3}));
    } else {
      EXPECT_FALSE(sorted.ok());
      EXPECT_FALSE(best.ok());
    }
  }
}

}  // namespace
}  // namespace gpusort::testing
