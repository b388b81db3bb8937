// TLS, mutual TLS and bearer tokens end to end: in-process servers started with certificates made by
// openssl for this run (tests/e2e/make_test_certs.sh), called through gpusort::Client with the matching
// options, and the server refusing to start on bad files.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpusort/client.h"
#include "gpusort/grpc_interop.h"
#include "gpusort/v1/echo.grpc.pb.h"
#include "tests/service/http_get.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

using ::testing::HasSubstr;

class Security : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char dir[] = "/tmp/gpusort-certs-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    const std::string command = std::string(GPUSORT_MAKE_TEST_CERTS) + " " + dir_;
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    Write("tokens", "# callers of the test\n\n  alpha-token-1  \nbeta-token-2\n");
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  static std::string Path(const std::string& name) { return dir_ + "/" + name; }
  // Owner-only, as token files should be (the server warns about others).
  static void Write(const std::string& name, const std::string& text) {
    std::ofstream(Path(name)) << text;
    std::filesystem::permissions(Path(name), std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }

  static ServerConfig Tls() {
    ServerConfig config = LoopbackConfig();
    config.tls_cert = Path("server.pem");
    config.tls_key = Path("server.key");
    return config;
  }
  static ServerConfig MutualTls() {
    ServerConfig config = Tls();
    config.tls_client_ca = Path("ca.pem");
    return config;
  }
  static ServerConfig Tokens() {
    ServerConfig config = LoopbackConfig();
    config.auth_tokens_file = Path("tokens");
    return config;
  }

  static ClientOptions Options(const TestServer& server) {
    ClientOptions options;
    options.target = server.address();
    options.timeout = std::chrono::seconds(20);
    options.retry.max_attempts = 1;  // a refused handshake fails at once
    return options;
  }
  static ClientOptions TrustingTheCa(const TestServer& server) {
    ClientOptions options = Options(server);
    options.tls.ca_file = Path("ca.pem");
    return options;
  }
  static ClientOptions WithClientCert(const TestServer& server, const std::string& name = "client") {
    ClientOptions options = TrustingTheCa(server);
    options.tls.cert_file = Path(name + ".pem");
    options.tls.key_file = Path(name + ".key");
    return options;
  }

  // A Sort of a few keys through `options`: OK with the right answer, or the status.
  static absl::Status SortWorks(ClientOptions options) {
    Client client(options);
    const std::vector<int32_t> keys = {5, -1, 3, 3, 0};
    auto sorted = client.Sort(keys);
    if (!sorted.ok()) return sorted.status();
    EXPECT_EQ(sorted->keys, (std::vector<int32_t>{-1, 0, 3, 3, 5}));
    return absl::OkStatus();
  }

  static std::string dir_;
};
std::string Security::dir_;

TEST_F(Security, TlsServerRefusesAPlaintextClientAndServesOneThatTrustsItsCa) {
  TestServer server(Tls());
  const absl::Status plaintext = SortWorks(Options(server));
  EXPECT_EQ(plaintext.code(), absl::StatusCode::kUnavailable) << plaintext;
  EXPECT_TRUE(SortWorks(TrustingTheCa(server)).ok());

  ClientOptions by_name = TrustingTheCa(server);
  by_name.target = "localhost:" + std::to_string(server.server().grpc_port());  // the certificate's DNS name
  EXPECT_TRUE(SortWorks(by_name).ok());
  EXPECT_TRUE(Client(by_name).Health().value_or(false));
}

TEST_F(Security, AClientTrustingAnotherCaIsRefused) {
  TestServer server(Tls());
  ClientOptions options = Options(server);
  options.tls.ca_file = Path("other-ca.pem");
  const absl::Status status = SortWorks(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_FALSE(Client(options).Health().ok());
}

TEST_F(Security, TheServerNameMustBeOneTheCertificateHolds) {
  TestServer server(Tls());
  ClientOptions options = TrustingTheCa(server);
  options.tls.server_name = "not-the-server.example";
  EXPECT_EQ(SortWorks(options).code(), absl::StatusCode::kUnavailable);
  options.tls.server_name = "localhost";
  EXPECT_TRUE(SortWorks(options).ok());
}

TEST_F(Security, MutualTlsRefusesClientsWithoutACertificateOrWithOneFromAnotherCa) {
  TestServer server(MutualTls());
  EXPECT_EQ(SortWorks(TrustingTheCa(server)).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(SortWorks(WithClientCert(server, "other-client")).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(SortWorks(Options(server)).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(SortWorks(WithClientCert(server)).ok());

  // Inline PEM works as files do; streamed and split calls carry the same credentials.
  ClientOptions inline_pem = TrustingTheCa(server);
  std::ifstream cert(Path("client.pem")), key(Path("client.key"));
  inline_pem.tls.cert_pem.assign(std::istreambuf_iterator<char>(cert), {});
  inline_pem.tls.key_pem.assign(std::istreambuf_iterator<char>(key), {});
  inline_pem.transport = Transport::kStream;
  inline_pem.stream_parts = 4;
  inline_pem.stream_parts_from_bytes = 1 << 16;
  Client client(inline_pem);
  const auto keys = MakeInput<float>(Pattern::kRandom, 100000, 3);
  auto sorted = client.Sort(keys);
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_TRUE(SameBits(sorted->keys, ReferenceSort(keys, SortOrder::kAscending)));
}

// gpusort/grpc_interop.h: credentials the caller built take the place of ClientOptions::tls, on the main
// channel and on a split sort's part connections alike, and CreateChannel dials with them too.
TEST_F(Security, ClientWithCredentialsDialsWithTheCallersOwnCredentials) {
  TestServer server(MutualTls());
  const auto text = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = text(Path("ca.pem"));
  ssl.pem_cert_chain = text(Path("client.pem"));
  ssl.pem_private_key = text(Path("client.key"));
  ClientOptions options = Options(server);  // no tls: the credentials alone must make the handshake
  options.transport = Transport::kStream;
  options.stream_parts = 4;
  options.stream_parts_from_bytes = 1 << 16;
  Client client = ClientWithCredentials(options, grpc::SslCredentials(ssl));
  ASSERT_TRUE(client.status().ok()) << client.status();
  const auto keys = MakeInput<float>(Pattern::kRandom, 100000, 4);
  auto sorted = client.Sort(keys);
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_TRUE(SameBits(sorted->keys, ReferenceSort(keys, SortOrder::kAscending)));

  // They replace options.tls rather than add to it: insecure credentials fail the TLS server even with a
  // client certificate in the options, and credentials without a certificate fail mutual TLS.
  const std::vector<int32_t> few = {3, 1, 2};
  EXPECT_EQ(ClientWithCredentials(WithClientCert(server), grpc::InsecureChannelCredentials()).Sort(few).status().code(),
            absl::StatusCode::kUnavailable);
  grpc::SslCredentialsOptions no_certificate;
  no_certificate.pem_root_certs = ssl.pem_root_certs;
  EXPECT_EQ(ClientWithCredentials(Options(server), grpc::SslCredentials(no_certificate)).Sort(few).status().code(),
            absl::StatusCode::kUnavailable);

  auto channel = CreateChannel(Options(server), grpc::SslCredentials(ssl));
  ASSERT_TRUE(channel.ok()) << channel.status();
  auto echo = v1::EchoService::NewStub(*channel);
  v1::EchoMessage request, response;
  request.set_data("over the caller's credentials");
  auto context = NewCallContext(Options(server));
  const grpc::Status echoed = echo->Echo(context.get(), request, &response);
  EXPECT_TRUE(echoed.ok()) << echoed.error_message();
  EXPECT_EQ(response.data(), request.data());
}

TEST_F(Security, TokensNoneIsUnauthenticatedWrongIsPermissionDeniedRightIsServed) {
  ServerConfig config = Tokens();
  config.metrics_listen = "127.0.0.1:0";
  TestServer server(config);
  const std::vector<uint32_t> keys = {9, 2, 7};
  for (Transport transport : {Transport::kUnary, Transport::kStream}) {
    ClientOptions options = Options(server);
    options.transport = transport;
    auto none = Client(options).Sort(keys);
    EXPECT_EQ(none.status().code(), absl::StatusCode::kUnauthenticated) << none.status();
    EXPECT_THAT(none.status().message(), HasSubstr("Bearer"));
    EXPECT_EQ(Client(options).TopK(keys, {.k = 1}).status().code(), absl::StatusCode::kUnauthenticated);

    options.bearer_token = "alpha-token-X";
    auto wrong = Client(options).Sort(keys);
    EXPECT_EQ(wrong.status().code(), absl::StatusCode::kPermissionDenied) << wrong.status();
    options.bearer_token = "";  // the empty token is no token
    EXPECT_EQ(Client(options).Sort(keys).status().code(), absl::StatusCode::kUnauthenticated);

    for (const char* token : {"alpha-token-1", "beta-token-2"}) {
      options.bearer_token = token;
      Client client(options);
      auto sorted = client.Sort(keys);
      ASSERT_TRUE(sorted.ok()) << sorted.status();
      EXPECT_EQ(sorted->keys, (std::vector<uint32_t>{2, 7, 9}));
      auto top = client.TopK(keys, {.k = 2});
      ASSERT_TRUE(top.ok()) << top.status();
      EXPECT_EQ(top->values, (std::vector<uint32_t>{9, 7}));
    }
  }
  // Health (and reflection) need no token: probes do not have one.
  ClientOptions no_token = Options(server);
  EXPECT_TRUE(Client(no_token).Health().value_or(false));
  EXPECT_TRUE(Client(no_token).Health("gpusort.v1.SortService").value_or(false));

  // Refused calls count in gpusort_requests_total like any other (retries are off here): per
  // transport, Sort was refused twice without a token (none, empty) and once with a wrong one, TopK
  // once without.
  const std::string metrics = HttpGet(server.server().metrics_port(), "/metrics");
  auto refused = [&](const char* method, const char* code) {
    return MetricValue(metrics, std::string("gpusort_requests_total{algorithm=\"auto\",code=\"") + code +
                                    "\",dtype=\"unknown\",method=\"" + method + "\"}");
  };
  for (const char* sort : {"Sort", "SortStream"}) {
    EXPECT_EQ(refused(sort, "UNAUTHENTICATED"), 2) << sort;
    EXPECT_EQ(refused(sort, "PERMISSION_DENIED"), 1) << sort;
  }
  EXPECT_EQ(refused("TopK", "UNAUTHENTICATED"), 1);
  EXPECT_EQ(refused("TopKStream", "UNAUTHENTICATED"), 1);
  EXPECT_EQ(MetricValue(metrics, "gpusort_inflight_requests"), 0);
}

TEST_F(Security, TokensCoverSplitSortsSharedMemoryAndEcho) {
  ServerConfig config = Tokens();
  config.shm_socket = TestShmSocketPath();
  TestServer server(config);
  ClientOptions options = Options(server);
  options.bearer_token = "beta-token-2";
  options.transport = Transport::kStream;
  options.stream_parts = 4;
  options.stream_parts_from_bytes = 1 << 16;
  const auto keys = MakeInput<int64_t>(Pattern::kRandom, 50000, 9);
  auto sorted = Client(options).Sort(keys);  // four SortStream calls, each with the token
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_TRUE(SameBits(sorted->keys, ReferenceSort(keys, SortOrder::kAscending)));

  options.transport = Transport::kSharedMemory;
  options.shm_socket = server.shm_socket();
  auto through_region = Client(options).Sort(keys);
  ASSERT_TRUE(through_region.ok()) << through_region.status();
  EXPECT_EQ(through_region->keys, sorted->keys);
  // Registering goes over the Unix socket, where the memory's descriptor is the authority; the region
  // is of no use without a token, because every Sort and TopK on it needs one.
  options.bearer_token.clear();
  Client without_token(options);
  auto region = without_token.CreateSharedMemory(4096);
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_EQ(without_token.SortInRegion(client::DType::kUint32, {}, client::Payload::kNone, (*region)->Ref(0, 400),
                                       (*region)->Ref(0, 400))
                .status()
                .code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(without_token.Sort(keys).status().code(), absl::StatusCode::kUnauthenticated);

  auto echo = v1::EchoService::NewStub(server.channel());
  v1::EchoMessage request, response;
  request.set_data("hello");
  grpc::ClientContext without;
  EXPECT_EQ(echo->Echo(&without, request, &response).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext with;
  with.AddMetadata("authorization", "bearer alpha-token-1");  // the scheme is case-insensitive
  grpc::Status ok = echo->Echo(&with, request, &response);
  EXPECT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(response.data(), "hello");
  grpc::ClientContext basic;
  basic.AddMetadata("authorization", "Basic YWxwaGE=");
  EXPECT_EQ(echo->Echo(&basic, request, &response).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(Security, TheHealthListenerServesPlaintextHealthOnlyAndFollowsTheDrain) {
  ServerConfig config = MutualTls();
  config.auth_tokens_file = Path("tokens");
  config.health_listen = "127.0.0.1:0";
  TestServer server(config);
  ASSERT_GT(server.server().health_port(), 0);
  ClientOptions probe;
  probe.target = "127.0.0.1:" + std::to_string(server.server().health_port());
  probe.retry.max_attempts = 1;
  Client prober(probe);
  EXPECT_TRUE(prober.Health().value_or(false));
  EXPECT_TRUE(prober.Health("gpusort.v1.SortService").value_or(false));
  probe.bearer_token = "alpha-token-1";
  auto sort = Client(probe).Sort(std::vector<int32_t>{2, 1});
  EXPECT_EQ(sort.status().code(), absl::StatusCode::kUnimplemented) << sort.status();
  EXPECT_THAT(sort.status().message(), HasSubstr("only grpc.health.v1.Health"));

  ClientOptions caller = WithClientCert(server);
  caller.bearer_token = "alpha-token-1";
  EXPECT_TRUE(SortWorks(caller).ok());

  EXPECT_TRUE(server.server().Drain());
  auto draining = prober.Health("gpusort.v1.SortService");
  EXPECT_TRUE(!draining.ok() || !*draining) << "the health port still says SERVING after the drain";
}

TEST_F(Security, BadFilesStopTheServerAtStartWithAMessage) {
  Write("garbage.pem", "this is not PEM\n");
  Write("empty-tokens", "# nobody\n\n   \n");
  Write("bad-tokens", "good-token\nhas space inside\n");
  struct Case {
    std::string what;
    std::function<void(ServerConfig&)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"missing cert", [](ServerConfig& c) { c.tls_cert = Path("nope.pem"); }, "--tls-cert"},
      {"missing key", [](ServerConfig& c) { c.tls_key = Path("nope.key"); }, "--tls-key"},
      {"cert without key", [](ServerConfig& c) { c.tls_key.clear(); }, "both --tls-cert and --tls-key"},
      {"garbage cert", [](ServerConfig& c) { c.tls_cert = Path("garbage.pem"); }, "no PEM certificate"},
      {"garbage key", [](ServerConfig& c) { c.tls_key = Path("garbage.pem"); }, "no PEM private key"},
      {"another cert's key", [](ServerConfig& c) { c.tls_key = Path("client.key"); }, "is not the key"},
      {"garbage client CA", [](ServerConfig& c) { c.tls_client_ca = Path("garbage.pem"); }, "--tls-client-ca"},
      {"missing client CA", [](ServerConfig& c) { c.tls_client_ca = Path("nope.pem"); }, "--tls-client-ca"},
      {"client CA without TLS",
       [](ServerConfig& c) {
         c.tls_cert.clear();
         c.tls_key.clear();
         c.tls_client_ca = Path("ca.pem");
       },
       "needs --tls-cert"},
      {"missing tokens", [](ServerConfig& c) { c.auth_tokens_file = Path("nope"); }, "--auth-tokens-file"},
      {"empty tokens", [](ServerConfig& c) { c.auth_tokens_file = Path("empty-tokens"); }, "holds no token"},
      {"bad token", [](ServerConfig& c) { c.auth_tokens_file = Path("bad-tokens"); }, "line 2"},
  };
  for (const Case& c : cases) {
    ServerConfig config = Tls();
    c.change(config);
    auto started = GpusortServer::Start(config, MakeCpuBackend());
    EXPECT_FALSE(started.ok()) << c.what << ": the server started";
    EXPECT_THAT(started.status().message(), HasSubstr(c.message)) << c.what;
  }
  if (getuid() != 0) {  // root reads any file
    Write("unreadable.key", "x");
    std::filesystem::permissions(Path("unreadable.key"), std::filesystem::perms::none);
    ServerConfig config = Tls();
    config.tls_key = Path("unreadable.key");
    EXPECT_THAT(GpusortServer::Start(config, MakeCpuBackend()).status().message(), HasSubstr("Permission denied"));
  }
}

}  // namespace
}  // namespace gpusort::testing
