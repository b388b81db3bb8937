// Callers who send what gRPC clients would not, or hold what they can and then go quiet (issue 14):
// each test is the attack that was found, and asserts the server answers it with a status and keeps
// serving everyone else.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>

#include "tests/service/http_get.h"
#include "tests/service/raw_http2.h"
#include "tests/service/test_server.h"

namespace gpusort::testing {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

v1::SortRequest SmallSort() {
  v1::SortRequest request;
  request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  request.set_keys(ToBytes(std::vector<uint32_t>{9, 3, 7, 1}));
  return request;
}

grpc::Status CallSort(v1::SortService::Stub& stub, const std::string& token = "") {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  v1::SortResponse response;
  return stub.Sort(&context, SmallSort(), &response);
}

bool IsServerMadeId(const std::string& id) { return std::regex_match(id, std::regex("[0-9a-f]{16}")); }

// Every log line the server writes while it lives, captured.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    sink->set_pattern("%l %v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
    spdlog::set_level(spdlog::level::info);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::vector<std::string> Lines() {
    spdlog::default_logger()->flush();
    std::vector<std::string> lines;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream out_;
};

// Item 1: gRPC aborts the process when a reply header holds a byte it forbids, and the server used to
// copy the caller's x-request-id into its reply headers as it came.
TEST(HostileMetadata, RequestIdWithForbiddenBytesIsReplacedOnEveryMethod) {
  TestServer server;
  const int port = server.server().grpc_port();
  const std::vector<std::string> bad_ids = {
      "a\nb", "a\rb", "a\tb", std::string("a\0b", 3), "a\x1b[31mred", "caf\xc3\xa9", "with space", "\x7f",
      std::string(129, 'x'), "line\n2026-11-24 critical admin token accepted"};
  v1::TopKRequest topk;
  topk.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  topk.mutable_options()->set_k(2);
  topk.set_keys(ToBytes(std::vector<uint32_t>{9, 3, 7, 1}));
  v1::SortStreamRequest first;
  *first.mutable_options() = SmallSort().options();
  first.set_keys(SmallSort().keys());
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"/gpusort.v1.SortService/Sort", GrpcFrame(SmallSort().SerializeAsString())},
      {"/gpusort.v1.SortService/TopK", GrpcFrame(topk.SerializeAsString())},
      {"/gpusort.v1.SortService/SortStream", GrpcFrame(first.SerializeAsString())}};
  for (const auto& [path, body] : calls) {
    for (const std::string& id : bad_ids) {
      SCOPED_TRACE(path + " id " + std::to_string(id.size()) + " bytes");
      RawHttp2Reply reply = RawGrpcCall(port, path, {{"x-request-id", id}}, body);
      ASSERT_TRUE(reply.connected);
      ASSERT_TRUE(reply.stream_closed) << "no answer: the server hung or died";
      EXPECT_EQ(reply.Header("grpc-status"), "0") << reply.Header("grpc-message");
      EXPECT_TRUE(IsServerMadeId(reply.Header("x-request-id"))) << reply.Header("x-request-id");
    }
  }
  EXPECT_TRUE(CallSort(server.stub()).ok());  // still serving
}

TEST(HostileMetadata, VisibleAsciiRequestIdIsKeptAsSent) {
  TestServer server;
  const std::string id = "trace-42:span/7+a=b";
  RawHttp2Reply reply = RawGrpcCall(server.server().grpc_port(), "/gpusort.v1.SortService/Sort",
                                    {{"x-request-id", id}}, GrpcFrame(SmallSort().SerializeAsString()));
  ASSERT_TRUE(reply.stream_closed);
  EXPECT_EQ(reply.Header("grpc-status"), "0");
  EXPECT_EQ(reply.Header("x-request-id"), id);
}

// Item 4: a region id with a newline forged a log line, and a 20 KB one pushed the error's metadata
// past the client's limit, which failed the call as RESOURCE_EXHAUSTED and every call on the channel.
TEST(CallerStrings, HugeRegionIdWithControlBytesIsCutAndEscapedInReplyAndLog) {
  LogCapture log;
  ServerConfig config = LoopbackConfig();
  config.log_level = "info";
  TestServer server(config);
  spdlog::set_level(spdlog::level::info);
  const std::string forged = "\n2026-11-24 critical admin token accepted \x1b[2J";
  v1::SortRequest request;
  request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  for (auto* ref : {request.mutable_keys_region(), request.mutable_output_region()}) {
    ref->set_region_id("id" + forged + std::string(20000, 'A'));
    ref->set_length(16);
  }
  // Several calls at once on one channel: one bad reply must not take the others down with it.
  std::vector<std::future<grpc::Status>> good;
  for (int i = 0; i < 4; ++i) good.push_back(std::async(std::launch::async, [&] { return CallSort(server.stub()); }));
  grpc::ClientContext context;
  v1::SortResponse response;
  const grpc::Status status = server.stub().Sort(&context, request, &response);
  EXPECT_NE(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message().substr(0, 200);
  EXPECT_FALSE(status.ok());
  EXPECT_LE(status.error_message().size(), 1100u);
  EXPECT_EQ(status.error_message().find_first_of("\n\r\x1b"), std::string::npos);
  for (auto& g : good) EXPECT_TRUE(g.get().ok());
  EXPECT_TRUE(CallSort(server.stub()).ok());

  std::size_t lines = 0;
  for (const std::string& line : log.Lines()) {
    ++lines;
    EXPECT_LE(line.size(), 2048u) << line.substr(0, 200);
    // Every line is one of the server's own, starting with its level: a caller's newline would have
    // started one with "2026-11-24 critical".
    EXPECT_TRUE(std::regex_search(line, std::regex("^(trace|debug|info|warning|error|critical) ")))
        << "a line the server did not start: " << line.substr(0, 200);
    EXPECT_EQ(line.find('\x1b'), std::string::npos);
  }
  EXPECT_GT(lines, 0u);
}

// The server's gpusort_inflight_requests gauge, read from /metrics (-1 if absent). Tests that must
// know a stream holds its ticket wait on this, not on a probing call: a probe takes a ticket itself for a
// moment, and the stream whose first message arrives in that moment is refused instead.
double InflightRequests(TestServer& server) {
  const std::string text = HttpGet(server.server().metrics_port(), "/metrics");
  const std::string name = "\ngpusort_inflight_requests ";
  const std::size_t at = text.find(name);
  return at == std::string::npos ? -1.0 : std::strtod(text.c_str() + at + name.size(), nullptr);
}

bool WaitForInflightRequests(TestServer& server, double want) {
  for (int i = 0; i < 1000; ++i) {
    if (InflightRequests(server) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

ServerConfig QuickTimeouts(int max_inflight) {
  ServerConfig config = LoopbackConfig();
  config.metrics_listen = "127.0.0.1:0";  // for InflightRequests
  config.max_inflight = max_inflight;
  config.stream_first_message_timeout_seconds = 0.5;
  config.stream_idle_timeout_seconds = 0.5;
  return config;
}

// Item 5: --max-inflight SortStreams that never sent a message held every ticket, for as long as
// the attacker liked.
TEST(IdleStreams, StreamsThatNeverSendHoldNoTicketAndEndAtTheFirstMessageDeadline) {
  TestServer server(QuickTimeouts(2));
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReaderWriter<v1::SortStreamRequest, v1::SortStreamResponse>>> streams;
  std::vector<std::unique_ptr<v1::SortService::Stub>> stubs;
  const auto start = Clock::now();
  for (int i = 0; i < 6; ++i) {
    stubs.push_back(server.NewStub());
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    streams.push_back(stubs.back()->SortStream(contexts.back().get()));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(CallSort(server.stub()).ok());  // the work tickets are all free
  for (auto& stream : streams) {
    v1::SortStreamResponse r;
    EXPECT_FALSE(stream->Read(&r));
    const grpc::Status status = stream->Finish();
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      EXPECT_THAT(status.error_message(), HasSubstr("--stream-first-message-timeout"));
    } else {  // past the waiting streams' own limit (as many as --max-inflight)
      EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
    }
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(CallSort(server.stub()).ok());
}

TEST(IdleStreams, StreamThatStopsSendingEndsAtTheIdleTimeoutAndGivesBackItsTicket) {
  // The test must see the ticket held before the idle timeout ends the stream: under ThreadSanitizer a
  // scrape of /metrics can take longer than QuickTimeouts' 0.5 s (the test failed 3 runs of 4 there).
  // And the first message must arrive before its own timeout, or the stream never takes the ticket:
  // under ThreadSanitizer beside other tests it came later than 0.5 s (a CI-like run, 2026-11-26: the
  // ticket was never seen in 14.8 s of scrapes).
  ServerConfig config = QuickTimeouts(1);
  config.stream_idle_timeout_seconds = 3;
  config.stream_first_message_timeout_seconds = 3;
  TestServer server(config);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stream = server.stub().SortStream(&context);
  v1::SortStreamRequest first;
  *first.mutable_options() = SmallSort().options();
  first.set_keys(SmallSort().keys());
  ASSERT_TRUE(stream->Write(first));
  // The stream holds the only ticket: a Sort is refused for it.
  ASSERT_TRUE(WaitForInflightRequests(server, 1));
  const grpc::Status refused = CallSort(server.stub());
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  v1::SortStreamResponse r;
  EXPECT_FALSE(stream->Read(&r));
  const grpc::Status ended = stream->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << ended.error_message();
  EXPECT_THAT(ended.error_message(), HasSubstr("--stream-idle-timeout"));
  EXPECT_TRUE(CallSort(server.stub()).ok());
}

TEST(IdleStreams, CallerThatStopsReadingTheAnswerIsEndedAndItsTicketComesBack) {
  TestServer server(QuickTimeouts(1));
  // The keys are made before the stream opens: under ThreadSanitizer making them takes longer than the
  // 0.5 s first-message timeout.
  const std::size_t n = std::size_t{16} << 20;  // a 64 MiB answer: far more than HTTP/2 lets through unread
  std::vector<uint32_t> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = static_cast<uint32_t>((i * 2654435761u) ^ (i >> 7));
  const std::string bytes = ToBytes(keys);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto stream = server.stub().SortStream(&context);
  v1::SortStreamRequest m;
  *m.mutable_options() = SmallSort().options();
  m.set_response_chunk_bytes(64 << 10);
  for (std::size_t pos = 0; pos < bytes.size(); pos += 4 << 20) {
    m.set_keys(bytes.substr(pos, 4 << 20));
    ASSERT_TRUE(stream->Write(m));
    m.Clear();
  }
  stream->WritesDone();
  // Read nothing. The ticket must come back once the server gives up on this caller.
  const auto start = Clock::now();
  bool served = false;
  while (!served && Clock::now() - start < std::chrono::seconds(30)) {
    served = CallSort(server.stub()).ok();
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(served);
  context.TryCancel();
  stream->Finish();
}

// Per-caller shares: with tokens, each token is a caller; one of them cannot take every ticket, however
// it spells its token (issue 41: the share was keyed by the raw header, so "bearer", "BEARER" and padded
// spellings of one token were as many callers, and took every ticket).
TEST(IdleStreams, OneCallerCannotTakeEveryTicket) {
  const std::string tokens_path = ::testing::TempDir() + "/gpusort-share-tokens";
  std::ofstream(tokens_path) << "token-of-mallory\ntoken-of-alice\n";
  ServerConfig config = LoopbackConfig();
  config.max_inflight = 4;  // one caller: 3 of them
  config.auth_tokens_file = tokens_path;
  config.metrics_listen = "127.0.0.1:0";
  TestServer server(config);
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReaderWriter<v1::SortStreamRequest, v1::SortStreamResponse>>> streams;
  v1::SortStreamRequest first;
  *first.mutable_options() = SmallSort().options();
  // Each of Mallory's streams spells the same token differently: authentication takes them all.
  const std::vector<std::string> spellings = {"Bearer token-of-mallory", "bearer token-of-mallory",
                                              "BEARER  token-of-mallory", "Bearer token-of-mallory  "};
  const auto open_stream = [&] {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->AddMetadata("authorization", spellings[contexts.size() - 1]);
    contexts.back()->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    streams.push_back(server.stub().SortStream(contexts.back().get()));
    return streams.back()->Write(first);
  };
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(open_stream());
  // Streams are admitted when the server reads their first message, in whatever order it reads them:
  // wait until all three hold a ticket before the fourth, so that the fourth is the one refused (CI once
  // saw the fourth admitted ahead of a slower third).
  ASSERT_TRUE(WaitForInflightRequests(server, 3));
  ASSERT_TRUE(open_stream());
  // The fourth is refused for Mallory's share; Alice is still served.
  v1::SortStreamResponse r;
  EXPECT_FALSE(streams.back()->Read(&r));
  const grpc::Status fourth = streams.back()->Finish();
  EXPECT_EQ(fourth.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(fourth.error_message(), HasSubstr("--max-inflight-per-caller"));
  EXPECT_TRUE(CallSort(server.stub(), "token-of-alice").ok());
  for (auto& c : contexts) c->TryCancel();
  for (std::size_t i = 0; i + 1 < streams.size(); ++i) streams[i]->Finish();
}

// A connection that carries no call is closed after --connection-idle-timeout: idle connections cannot
// pile up without bound.
TEST(IdleConnections, AConnectionWithNoCallIsClosed) {
  ServerConfig config = LoopbackConfig();
  config.connection_idle_timeout_seconds = 0.5;
  TestServer server(config);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server.server().grpc_port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string preface = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string("\0\0\0\4\0\0\0\0\0", 9);
  ASSERT_EQ(::send(fd, preface.data(), preface.size(), MSG_NOSIGNAL), static_cast<ssize_t>(preface.size()));
  timeval wait{.tv_sec = 5, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  const auto start = Clock::now();
  bool goaway = false;
  std::string got;
  char buffer[4096];
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) {
    got.append(buffer, static_cast<std::size_t>(n));
    // Frames: 3 bytes length, 1 byte type (7: GOAWAY), 1 flags, 4 stream id, payload.
    for (std::size_t at = 0; at + 9 <= got.size();) {
      const std::size_t length = (std::size_t(uint8_t(got[at])) << 16) | (std::size_t(uint8_t(got[at + 1])) << 8) |
                                 uint8_t(got[at + 2]);
      if (got[at + 3] == 7) goaway = true;
      at += 9 + length;
    }
    if (goaway) break;
  }
  ::close(fd);
  EXPECT_TRUE(goaway);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(4));
}

// Item 6: civetweb's 2 threads each waited 30 s on an idle connection, so two of them held a scrape; with 8
// threads and a 3 s wait, 60 held it 16 s (issue 41's second attack session). The server's own listener
// (metrics_listener.h) holds 300 idle connections and answers at once.
TEST(MetricsEndpoint, IdleConnectionsDoNotHoldAScrape) {
  ServerConfig config = LoopbackConfig();
  config.metrics_listen = "127.0.0.1:0";
  TestServer server(config);
  const int port = server.server().metrics_port();
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {  // sending nothing
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    idle.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = Clock::now();
  const std::string text = HttpGet(port, "/metrics");
  const auto took = Clock::now() - start;
  EXPECT_THAT(text, HasSubstr("gpusort_build_info"));
  EXPECT_LT(took, std::chrono::seconds(1)) << "a scrape waited behind idle connections";
  for (int fd : idle) ::close(fd);
}

// Item 8's flood: refused calls are all counted, but their log lines are rate-limited.
TEST(RefusalLog, AFloodOfRefusalsWritesAFewLinesAndSaysHowManyWereHeldBack) {
  LogCapture log;
  ServerConfig config = LoopbackConfig();
  config.log_level = "info";
  config.metrics_listen = "127.0.0.1:0";
  const std::string tokens_path = ::testing::TempDir() + "/gpusort-flood-tokens";
  std::ofstream(tokens_path) << "the-only-token\n";
  config.auth_tokens_file = tokens_path;
  TestServer server(config);
  spdlog::set_level(spdlog::level::info);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(CallSort(server.stub(), "wrong").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the next second's window
  EXPECT_EQ(CallSort(server.stub(), "wrong").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  int refusal_lines = 0;
  bool said_held_back = false;
  for (const std::string& line : log.Lines()) {
    if (line.find("PERMISSION_DENIED") == std::string::npos) continue;
    ++refusal_lines;
    said_held_back |= line.find("held back") != std::string::npos;
  }
  EXPECT_LE(refusal_lines, 60);  // 20 a second, over however many seconds the flood took
  EXPECT_GE(refusal_lines, 2);
  EXPECT_TRUE(said_held_back);
  const std::string metrics = HttpGet(server.server().metrics_port(), "/metrics");
  EXPECT_EQ(MetricValue(metrics, "gpusort_requests_total{algorithm=\"auto\",code=\"PERMISSION_DENIED\",dtype=\"unknown\",method=\"Sort\"}"), 301);
}

}  // namespace
}  // namespace gpusort::testing
