// SortOnSockets (sort.proto, "Sockets beside gRPC"), spoken byte by byte: the call over the raw stub,
// the parts over plain TCP in the documented wire format (gpusort/v1/data_socket.h). Every part gets
// back its range of the whole sorted array; a part that misbehaves, stalls or goes away, a ticket that
// is wrong or spent, and a caller that cancels each end the call with a status and are answered on the
// socket (never a hang: every call here has a deadline).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gpusort/v1/data_socket.h"
#include "server/transport/data_port/data_socket_listener.h"
#include "server/transport/data_port/socket_sorts.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

namespace wire = v1::data_socket;
constexpr auto kDeadline = std::chrono::seconds(30);

ServerConfig DataPortConfig() {
  ServerConfig config = LoopbackConfig();
  config.data_port = 0;
  return config;
}

// The gRPC half: the call, its ticket and port once the first event came.
struct Call {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::SocketSortEvent>> reader;
  wire::Ticket ticket{};
  int port = 0;
  bool started = false;  // the first event came

  Call(v1::SortService::Stub& stub, const v1::SortOptions& options, uint64_t total_keys, uint32_t parts,
       std::chrono::seconds deadline = kDeadline) {
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    v1::SocketSortRequest request;
    *request.mutable_options() = options;
    request.set_total_keys(total_keys);
    request.set_parts(parts);
    reader = stub.SortOnSockets(&context, request);
    v1::SocketSortEvent first;
    if (!reader->Read(&first)) return;
    started = first.ticket().size() == wire::kTicketBytes && first.port() != 0;
    if (started) std::memcpy(ticket.data(), first.ticket().data(), ticket.size());
    port = static_cast<int>(first.port());
  }
  // The last event's info (when the call ends OK) and the call's status.
  grpc::Status End(v1::ExecutionInfo* info = nullptr) {
    v1::SocketSortEvent last;
    while (reader->Read(&last)) {
      if (info != nullptr && last.has_info()) *info = last.info();
    }
    return reader->Finish();
  }
};

int Connect(int port, const char* from = nullptr) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (from != nullptr) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    inet_pton(AF_INET, from, &local.sin_addr);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)), 0);
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << std::strerror(errno);
  timeval timeout{.tv_sec = 30, .tv_usec = 0};  // no test waits forever on a reply
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return fd;
}

bool SendBytes(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = send(fd, p, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool ReceiveBytes(int fd, void* out, std::size_t size) {
  auto* p = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t n = recv(fd, p, size, 0);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool SendHeader(int fd, const wire::Ticket& ticket, uint32_t index, uint64_t bytes) {
  const auto header = wire::EncodeRequest({.index = index, .bytes = bytes, .ticket = ticket});
  return SendBytes(fd, header.data(), header.size());
}

// What the data port answered a part: its code and reason, or its keys and indices.
struct PartReply {
  bool received = false;  // a whole reply header came
  uint32_t code = 0;
  std::string reason, keys, indices;
};

PartReply ReceiveReply(int fd) {
  PartReply reply;
  std::array<std::byte, wire::kReplyBytes> header;
  if (!ReceiveBytes(fd, header.data(), header.size())) return reply;
  const std::optional<wire::Reply> decoded = wire::DecodeReply(header);
  if (!decoded) return reply;
  reply.received = true;
  reply.code = decoded->code;
  reply.reason.resize(decoded->text_length);
  reply.keys.resize(decoded->key_bytes);
  reply.indices.resize(decoded->index_bytes);
  if (!ReceiveBytes(fd, reply.reason.data(), reply.reason.size()) ||
      !ReceiveBytes(fd, reply.keys.data(), reply.keys.size()) ||
      !ReceiveBytes(fd, reply.indices.data(), reply.indices.size())) {
    reply.received = false;
  }
  return reply;
}

// Whether the server closed `fd` (a read sees its end rather than bytes or a timeout).
bool ClosedByServer(int fd) {
  char byte;
  return recv(fd, &byte, 1, 0) == 0;
}

class SocketSort : public ::testing::Test {
 protected:
  // Sorts `keys` in `parts` parts, each on its own connection (or on `fds` when given: connections that
  // carried earlier parts), and checks the joined answer against the reference.
  template <typename T>
  void SortOnSockets(const std::vector<T>& keys, uint32_t parts, bool descending, bool with_indices,
                     std::size_t rows = 1, std::vector<int>* fds = nullptr) {
    const std::size_t n = keys.size();
    auto options = TestSortOptions(WireDType<T>(), descending, with_indices ? v1::PAYLOAD_INDICES : v1::PAYLOAD_NONE);
    options.set_rows(rows);
    Call call(server_.stub(), options, n, parts);
    ASSERT_TRUE(call.started) << call.End().error_message();
    std::vector<int> own;
    if (fds == nullptr) fds = &own;
    while (fds->size() < parts) fds->push_back(Connect(call.port));
    const std::string bytes = ToBytes(keys);
    std::vector<std::future<PartReply>> replies;
    for (uint32_t i = 0; i < parts; ++i) {
      const std::size_t begin = n * i / parts, end = n * (i + 1) / parts;
      replies.push_back(std::async(std::launch::async, [&, i, begin, end] {
        const int fd = (*fds)[i];
        if (!SendHeader(fd, call.ticket, i, (end - begin) * sizeof(T)) ||
            !SendBytes(fd, bytes.data() + begin * sizeof(T), (end - begin) * sizeof(T))) {
          return PartReply{};
        }
        return ReceiveReply(fd);
      }));
    }
    std::string sorted, indices;
    for (uint32_t i = 0; i < parts; ++i) {
      PartReply reply = replies[i].get();
      ASSERT_TRUE(reply.received) << "part " << i;
      ASSERT_EQ(reply.code, 0u) << "part " << i << ": " << reply.reason;
      sorted += reply.keys;
      indices += reply.indices;
    }
    v1::ExecutionInfo info;
    const grpc::Status status = call.End(&info);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(info.backend(), ExpectedBackend());
    const SortOrder order = descending ? SortOrder::kDescending : SortOrder::kAscending;
    EXPECT_TRUE(SameBits(FromBytes<T>(sorted), ReferenceRowSort(keys, rows, order)));
    if (with_indices) EXPECT_EQ(FromBytes<int64_t>(indices), ReferenceRowStableArgsort(keys, rows, order));
    for (int fd : own) close(fd);
  }

  TestServer server_{DataPortConfig()};
};

TEST_F(SocketSort, PartsSortTheWholeArrayInEveryDtypeAndOrder) {
  SortOnSockets(MakeInput<uint32_t>(Pattern::kRandom, 100003), 3, false, false);
  std::vector<float> floats = MakeInput<float>(Pattern::kSpecials, 70001, 3);
  SortOnSockets(floats, 4, true, true);
  SortOnSockets(MakeInput<int64_t>(Pattern::kFewDistinct, 50001, 5), 2, false, true);
  SortOnSockets(MakeInput<double>(Pattern::kSpecials, 40000, 6), 5, false, false);
  SortOnSockets(MakeInput<Float16>(Pattern::kSpecials, 30000, 7), 3, true, false);
  SortOnSockets(MakeInput<int8_t>(Pattern::kReversed, 20001, 8), 2, false, true);
}

TEST_F(SocketSort, EdgeSizesOneConnectionAndEmptyParts) {
  for (std::size_t n : EdgeSizes()) SortOnSockets(MakeInput<uint32_t>(Pattern::kRandom, n, n), 1, false, false);
  SortOnSockets(MakeInput<uint32_t>(Pattern::kRandom, 3, 9), 8, false, true);  // five parts empty
  SortOnSockets(std::vector<uint32_t>{}, 4, false, false);                      // every part empty
}

TEST_F(SocketSort, RowsCutAcrossPartsAreEachSortedAlone) {
  SortOnSockets(MakeInput<uint32_t>(Pattern::kRandom, 7 * 3001, 12), 3, false, true, 7);
}

TEST_F(SocketSort, AConnectionCarriesThePartsOfSeveralCallsInTurn) {
  std::vector<int> fds;
  SortOnSockets(MakeInput<uint32_t>(Pattern::kRandom, 10000, 1), 2, false, false, 1, &fds);
  SortOnSockets(MakeInput<int32_t>(Pattern::kSorted, 20000, 2), 2, true, true, 1, &fds);
  SortOnSockets(MakeInput<uint64_t>(Pattern::kRandom, 5, 3), 2, false, false, 1, &fds);
  for (int fd : fds) close(fd);
}

// --- refusals at the call -----------------------------------------------------------------------------

TEST_F(SocketSort, BadCallsAreRefusedWithTheirReason) {
  struct Case {
    uint32_t parts;
    uint64_t total;
    v1::Payload payload;
    uint64_t rows;
    grpc::StatusCode code;
    std::string says;
  } cases[] = {
      {0, 10, v1::PAYLOAD_NONE, 1, grpc::StatusCode::INVALID_ARGUMENT, "parts must be 1 to 64"},
      {65, 10, v1::PAYLOAD_NONE, 1, grpc::StatusCode::INVALID_ARGUMENT, "parts must be 1 to 64"},
      {2, 10, v1::PAYLOAD_VALUES, 1, grpc::StatusCode::INVALID_ARGUMENT, "keys only"},
      {2, 10, v1::PAYLOAD_NONE, 3, grpc::StatusCode::INVALID_ARGUMENT, "does not divide total_keys 10"},
      {2, uint64_t{1} << 62, v1::PAYLOAD_NONE, 1, grpc::StatusCode::RESOURCE_EXHAUSTED, "request limit"},
  };
  for (const Case& c : cases) {
    auto options = TestSortOptions(v1::DTYPE_UINT32, false, c.payload);
    options.set_rows(c.rows);
    if (c.payload == v1::PAYLOAD_VALUES) options.set_value_width(4);
    Call call(server_.stub(), options, c.total, c.parts);
    EXPECT_FALSE(call.started);
    const grpc::Status status = call.End();
    EXPECT_EQ(status.error_code(), c.code) << c.says;
    EXPECT_THAT(status.error_message(), ::testing::HasSubstr(c.says));
  }
  v1::SortOptions no_dtype;
  Call call(server_.stub(), no_dtype, 10, 1);
  EXPECT_EQ(call.End().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(SocketSortOff, AServerWithoutADataPortSaysSo) {
  TestServer server;  // no --data-port
  Call call(server.stub(), TestSortOptions(v1::DTYPE_UINT32), 10, 1);
  const grpc::Status status = call.End();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), ::testing::HasSubstr("--data-port"));
}

TEST(SocketSortOff, TlsOnTheGrpcPortRefusesTheDataPort) {
  ServerConfig config = DataPortConfig();
  config.tls_cert = "/any/cert.pem";
  SocketSorts sorts;
  const auto listener = StartDataPort(config, sorts);
  ASSERT_FALSE(listener.ok());
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(listener.status().message()), ::testing::HasSubstr("clear text"));
}

// --- misbehaving parts --------------------------------------------------------------------------------

TEST_F(SocketSort, NotAHeaderAWrongVersionOrReservedBytesAreRefusedAndClosed) {
  Call call(server_.stub(), TestSortOptions(v1::DTYPE_UINT32), 4, 1);
  ASSERT_TRUE(call.started);
  {
    const int fd = Connect(call.port);
    const std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(64, 'x');
    ASSERT_TRUE(SendBytes(fd, junk.data(), junk.size()));
    const PartReply reply = ReceiveReply(fd);
    EXPECT_TRUE(reply.received);
    EXPECT_EQ(reply.code, static_cast<uint32_t>(grpc::StatusCode::INVALID_ARGUMENT));
    EXPECT_THAT(reply.reason, ::testing::HasSubstr("not a data-port request header"));
    EXPECT_TRUE(ClosedByServer(fd));
    close(fd);
  }
  for (int variant = 0; variant < 2; ++variant) {
    auto header = wire::EncodeRequest({.index = 0, .bytes = 16, .ticket = call.ticket});
    header[variant == 0 ? 4 : 56] = std::byte{2};  // the version, or a reserved byte
    const int fd = Connect(call.port);
    ASSERT_TRUE(SendBytes(fd, header.data(), header.size()));
    const PartReply reply = ReceiveReply(fd);
    EXPECT_EQ(reply.code, static_cast<uint32_t>(variant == 0 ? grpc::StatusCode::UNIMPLEMENTED
                                                             : grpc::StatusCode::INVALID_ARGUMENT));
    EXPECT_TRUE(ClosedByServer(fd));
    close(fd);
  }
  // None of that touched the call: its one part still sorts.
  const int fd = Connect(call.port);
  const std::vector<uint32_t> keys = {4, 1, 3, 2};
  ASSERT_TRUE(SendHeader(fd, call.ticket, 0, 16) && SendBytes(fd, keys.data(), 16));
  const PartReply reply = ReceiveReply(fd);
  EXPECT_EQ(reply.code, 0u) << reply.reason;
  EXPECT_EQ(FromBytes<uint32_t>(reply.keys), (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_TRUE(call.End().ok());
  close(fd);
}

TEST_F(SocketSort, AWrongOrSpentTicketOpensNothing) {
  Call call(server_.stub(), TestSortOptions(v1::DTYPE_UINT32), 1, 1);
  ASSERT_TRUE(call.started);
  wire::Ticket wrong = call.ticket;
  wrong[31] ^= std::byte{1};  // the secret half: the lookup's half still finds the call
  int fd = Connect(call.port);
  ASSERT_TRUE(SendHeader(fd, wrong, 0, 4));
  PartReply reply = ReceiveReply(fd);
  EXPECT_EQ(reply.code, static_cast<uint32_t>(grpc::StatusCode::PERMISSION_DENIED));
  close(fd);
  fd = Connect(call.port);
  const uint32_t key = 7;
  ASSERT_TRUE(SendHeader(fd, call.ticket, 0, 4) && SendBytes(fd, &key, 4));
  EXPECT_EQ(ReceiveReply(fd).code, 0u);
  EXPECT_TRUE(call.End().ok());
  // The call is over: its ticket is spent, even for the connection that used it.
  ASSERT_TRUE(SendHeader(fd, call.ticket, 0, 4));
  reply = ReceiveReply(fd);
  EXPECT_EQ(reply.code, static_cast<uint32_t>(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(reply.reason, ::testing::HasSubstr("opens no call in progress"));
  close(fd);
}

TEST_F(SocketSort, APartOfTheWrongSizeOrTwiceOrOutOfRangeFailsTheCall) {
  for (int variant = 0; variant < 3; ++variant) {
    Call call(server_.stub(), TestSortOptions(v1::DTYPE_UINT32), 10, 2);
    ASSERT_TRUE(call.started);
    std::vector<int> fds;
    if (variant == 1) {  // part 0 twice: the first waits for part 1, the second is refused
      fds.push_back(Connect(call.port));
      ASSERT_TRUE(SendHeader(fds.back(), call.ticket, 0, 20) && SendBytes(fds.back(), std::string(20, '\1').data(), 20));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // taken in before its double comes
    }
    fds.push_back(Connect(call.port));
    const uint32_t index = variant == 2 ? 2 : 0;
    const uint64_t bytes = variant == 0 ? 24 : 20;
    ASSERT_TRUE(SendHeader(fds.back(), call.ticket, index, bytes));
    const PartReply reply = ReceiveReply(fds.back());
    EXPECT_EQ(reply.code, static_cast<uint32_t>(grpc::StatusCode::INVALID_ARGUMENT)) << variant;
    EXPECT_THAT(reply.reason, ::testing::HasSubstr(variant == 0   ? "announces 24 bytes; its range holds 20"
                                                   : variant == 1 ? "came twice"
                                                                  : "not below the call's 2 parts"));
    if (variant == 1) {  // the waiting part is told why, too
      const PartReply first = ReceiveReply(fds.front());
      EXPECT_EQ(first.code, static_cast<uint32_t>(grpc::StatusCode::INVALID_ARGUMENT));
    }
    const grpc::Status status = call.End();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    for (int fd : fds) close(fd);
  }
}

TEST_F(SocketSort, APartWhoseConnectionDiesMidwayFailsTheCall) {
  Call call(server_.stub(), TestSortOptions(v1::DTYPE_UINT32), 1000, 2);
  ASSERT_TRUE(call.started);
  const int waiting = Connect(call.port);
  ASSERT_TRUE(SendHeader(waiting, call.ticket, 1, 2000) && SendBytes(waiting, std::string(2000, '\2').data(), 2000));
  // Time for the server to take the waiting part in (its thread may start after the other's): a part
  // that comes after the call ended is refused for its spent ticket instead, also an answer, but not
  // the one this test is about.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const int dying = Connect(call.port);
  ASSERT_TRUE(SendHeader(dying, call.ticket, 0, 2000) && SendBytes(dying, std::string(999, '\3').data(), 999));
  close(dying);
  const PartReply reply = ReceiveReply(waiting);
  EXPECT_EQ(reply.code, static_cast<uint32_t>(grpc::StatusCode::UNAVAILABLE)) << reply.reason;
  EXPECT_EQ(call.End().error_code(), grpc::StatusCode::UNAVAILABLE);
  close(waiting);
}

TEST_F(SocketSort, ACallerThatCancelsEndsItsPartsWaitAndConnections) {
  auto call = std::make_unique<Call>(server_.stub(), TestSortOptions(v1::DTYPE_UINT32), 8, 2);
  ASSERT_TRUE(call->started);
  const int waiting = Connect(call->port);
  ASSERT_TRUE(SendHeader(waiting, call->ticket, 0, 16) && SendBytes(waiting, std::string(16, '\1').data(), 16));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  call->context.TryCancel();
  const PartReply reply = ReceiveReply(waiting);
  EXPECT_EQ(reply.code, static_cast<uint32_t>(grpc::StatusCode::CANCELLED)) << reply.reason;
  EXPECT_TRUE(ClosedByServer(waiting));
  EXPECT_EQ(call->End().error_code(), grpc::StatusCode::CANCELLED);
  close(waiting);
}

TEST(SocketSortTimeouts, APartThatStallsOrNeverComesEndsTheCallAfterTheIdleTimeout) {
  ServerConfig config = DataPortConfig();
  config.stream_idle_timeout_seconds = 0.5;
  TestServer server(config);
  {  // the part sends half its keys and stops
    Call call(server.stub(), TestSortOptions(v1::DTYPE_UINT32), 100, 1);
    ASSERT_TRUE(call.started);
    const int fd = Connect(call.port);
    ASSERT_TRUE(SendHeader(fd, call.ticket, 0, 400) && SendBytes(fd, std::string(200, '\1').data(), 200));
    const PartReply reply = ReceiveReply(fd);
    EXPECT_EQ(reply.code, static_cast<uint32_t>(grpc::StatusCode::DEADLINE_EXCEEDED)) << reply.reason;
    EXPECT_EQ(call.End().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    close(fd);
  }
  {  // no part ever connects
    const auto start = std::chrono::steady_clock::now();
    Call call(server.stub(), TestSortOptions(v1::DTYPE_UINT32), 100, 3);
    ASSERT_TRUE(call.started);
    const grpc::Status status = call.End();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    EXPECT_THAT(status.error_message(), ::testing::HasSubstr("--stream-idle-timeout"));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  }
}

TEST(SocketSortTimeouts, AHeaderTrickledByteByByteIsCutOffAfterTheIdleTimeoutInAll) {
  ServerConfig config = DataPortConfig();
  config.stream_idle_timeout_seconds = 0.5;
  TestServer server(config);
  Call call(server.stub(), TestSortOptions(v1::DTYPE_UINT32), 1, 1);
  ASSERT_TRUE(call.started);
  const int fd = Connect(call.port);
  const auto header = wire::EncodeRequest({.index = 0, .bytes = 4, .ticket = call.ticket});
  const auto start = std::chrono::steady_clock::now();
  // A byte every 100 ms: each comes well within the idle timeout, the whole header never would (6.4 s).
  bool closed = false;
  for (std::size_t i = 0; i < header.size() && !closed; ++i) {
    closed = send(fd, &header[i], 1, MSG_NOSIGNAL) != 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    char byte;
    closed = closed || recv(fd, &byte, 1, MSG_DONTWAIT) == 0;
  }
  EXPECT_TRUE(closed) << "the server waited for the whole trickled header";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  close(fd);
  call.context.TryCancel();
  (void)call.End();
}

TEST(SocketSortLimits, ConnectionsOverTheLimitAreRefusedAtOnce) {
  ServerConfig config = DataPortConfig();
  config.data_max_connections = 2;
  TestServer server(config);
  Call call(server.stub(), TestSortOptions(v1::DTYPE_UINT32), 3, 3);
  ASSERT_TRUE(call.started);
  const int a = Connect(call.port), b = Connect(call.port);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // both accepted (the listener polls every 250 ms)
  const int c = Connect(call.port);
  const PartReply reply = ReceiveReply(c);
  EXPECT_EQ(reply.code, static_cast<uint32_t>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  EXPECT_THAT(reply.reason, ::testing::HasSubstr("--data-max-connections"));
  call.context.TryCancel();
  (void)call.End();
  for (int fd : {a, b, c}) close(fd);
}

TEST(SocketSortHosts, ATicketServesOnlyTheHostThatMadeTheCall) {
  EXPECT_TRUE(SameCallerHost("ipv4:10.0.0.7", "ipv4:10.0.0.7"));
  EXPECT_FALSE(SameCallerHost("ipv4:10.0.0.7", "ipv4:10.0.0.8"));
  EXPECT_FALSE(SameCallerHost("ipv4:10.0.0.7", "ipv4:127.0.0.1"));
  EXPECT_FALSE(SameCallerHost("ipv4:127.0.0.1", "ipv4:10.0.0.7"));
  EXPECT_TRUE(SameCallerHost("ipv4:127.0.0.1", "ipv6:[::1]"));  // loopback is this host by any name
  EXPECT_TRUE(SameCallerHost("unix:/run/gpusort.sock", "ipv4:127.0.0.1"));
  EXPECT_FALSE(SameCallerHost("unix:/run/gpusort.sock", "ipv4:10.0.0.7"));
  EXPECT_TRUE(SameCallerHost("ipv6:%5B2001:db8::1%5D", "ipv6:[2001:db8::1]"));
  EXPECT_TRUE(SameCallerHost("ipv6:[::ffff:10.0.0.7]", "ipv4:10.0.0.7"));
  EXPECT_FALSE(SameCallerHost("ipv6:[2001:db8::1]", "ipv6:[2001:db8::2]"));
}

}  // namespace
}  // namespace gpusort::testing
