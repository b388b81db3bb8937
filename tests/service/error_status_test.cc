// Every bad input and every overload gets its own clear status, never a crash, hang or wrong answer.
#include <future>
#include <thread>

#include "tests/service/scripted_backend.h"
#include "tests/service/test_server.h"

namespace gpusort::testing {
namespace {

using ::testing::HasSubstr;

class ErrorStatus : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ServerConfig config = LoopbackConfig();
    config.max_request_bytes = 1 << 20;
    server_ = new TestServer(config);
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  grpc::Status Sort(const v1::SortRequest& request) {
    v1::SortResponse response;
    grpc::ClientContext context;
    return server_->stub().Sort(&context, request, &response);
  }
  grpc::Status TopK(const v1::TopKRequest& request) {
    v1::TopKResponse response;
    grpc::ClientContext context;
    return server_->stub().TopK(&context, request, &response);
  }
  static v1::SortRequest U32Sort(std::size_t n) {
    v1::SortRequest r;
    r.mutable_options()->set_dtype(v1::DTYPE_UINT32);
    r.set_keys(std::string(n * 4, '\1'));
    return r;
  }
  static v1::TopKRequest U32TopK(std::size_t n, uint64_t k, uint64_t rows = 0) {
    v1::TopKRequest r;
    r.mutable_options()->set_dtype(v1::DTYPE_UINT32);
    r.mutable_options()->set_k(k);
    r.mutable_options()->set_rows(rows);
    r.set_keys(std::string(n * 4, '\2'));
    return r;
  }

  static TestServer* server_;
};
TestServer* ErrorStatus::server_ = nullptr;

#define EXPECT_STATUS(call, code, text)                          \
  do {                                                           \
    const grpc::Status s_ = (call);                              \
    EXPECT_EQ(s_.error_code(), grpc::StatusCode::code) << s_.error_message(); \
    EXPECT_THAT(s_.error_message(), HasSubstr(text));            \
  } while (false)

TEST_F(ErrorStatus, UnknownOrMissingDType) {
  auto r = U32Sort(4);
  r.mutable_options()->set_dtype(static_cast<v1::DType>(99));
  EXPECT_STATUS(Sort(r), INVALID_ARGUMENT, "dtype");
  r.mutable_options()->set_dtype(v1::DTYPE_UNSPECIFIED);
  EXPECT_STATUS(Sort(r), INVALID_ARGUMENT, "dtype");
}

TEST_F(ErrorStatus, UnknownEnumsInOptions) {
  auto r = U32Sort(4);
  r.mutable_options()->set_algorithm(static_cast<v1::Algorithm>(77));
  EXPECT_STATUS(Sort(r), INVALID_ARGUMENT, "algorithm");
  r = U32Sort(4);
  r.mutable_options()->set_order(static_cast<v1::Order>(5));
  EXPECT_STATUS(Sort(r), INVALID_ARGUMENT, "order");
  auto t = U32TopK(8, 2);
  t.mutable_options()->set_output(static_cast<v1::TopKOutput>(9));
  EXPECT_STATUS(TopK(t), INVALID_ARGUMENT, "output");
}

TEST_F(ErrorStatus, KeyBytesNotAWholeNumberOfElements) {
  auto r = U32Sort(4);
  r.mutable_keys()->push_back('x');
  EXPECT_STATUS(Sort(r), INVALID_ARGUMENT, "whole number");
  auto t = U32TopK(4, 1);
  t.mutable_keys()->resize(t.keys().size() - 1);
  EXPECT_STATUS(TopK(t), INVALID_ARGUMENT, "whole number");
}

TEST_F(ErrorStatus, ValuesThatDoNotMatchTheKeys) {
  auto r = U32Sort(10);
  r.mutable_options()->set_payload(v1::PAYLOAD_VALUES);
  r.mutable_options()->set_value_width(8);
  r.set_values(std::string(79, 'v'));
  EXPECT_STATUS(Sort(r), INVALID_ARGUMENT, "values hold 79 bytes");
  r.mutable_options()->set_value_width(0);
  EXPECT_STATUS(Sort(r), INVALID_ARGUMENT, "value_width");
  r.mutable_options()->set_value_width(257);
  EXPECT_STATUS(Sort(r), INVALID_ARGUMENT, "value_width");
  auto plain = U32Sort(10);
  plain.set_values("stray");
  EXPECT_STATUS(Sort(plain), INVALID_ARGUMENT, "values were sent");
  plain.clear_values();
  plain.mutable_options()->set_value_width(4);
  EXPECT_STATUS(Sort(plain), INVALID_ARGUMENT, "value_width");
}

TEST_F(ErrorStatus, TopKShapeRules) {
  EXPECT_STATUS(TopK(U32TopK(10, 0)), INVALID_ARGUMENT, "k must be at least 1");
  EXPECT_STATUS(TopK(U32TopK(10, 11)), INVALID_ARGUMENT, "larger than the row length");
  EXPECT_STATUS(TopK(U32TopK(10, 3, 5)), INVALID_ARGUMENT, "larger than the row length 2");
  EXPECT_STATUS(TopK(U32TopK(10, 1, 3)), INVALID_ARGUMENT, "does not divide");
  EXPECT_STATUS(TopK(U32TopK(0, 1)), INVALID_ARGUMENT, "row length 0");
}

TEST_F(ErrorStatus, RequestOverTheSizeLimitIsResourceExhausted) {
  EXPECT_STATUS(Sort(U32Sort((1 << 20) / 4 + 1)), RESOURCE_EXHAUSTED, "limit");
  // The same limit holds for streams, however the bytes are cut.
  grpc::ClientContext context;
  auto stream = server_->stub().SortStream(&context);
  v1::SortStreamRequest m;
  m.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  m.set_keys(std::string(1 << 19, 'k'));
  stream->Write(m);
  m.clear_options();
  stream->Write(m);
  m.set_keys("more");
  stream->Write(m);
  stream->WritesDone();
  v1::SortStreamResponse ignored;
  while (stream->Read(&ignored)) {
  }
  EXPECT_STATUS(stream->Finish(), RESOURCE_EXHAUSTED, "limit");
}

TEST_F(ErrorStatus, AlgorithmTheBackendLacksIsUnimplementedWithTheList) {
  auto r = U32Sort(4);
  r.mutable_options()->set_algorithm(v1::ALGORITHM_BITONIC);
  if (TestingCuda()) {
    EXPECT_TRUE(Sort(r).ok());  // the CUDA backend has every sort algorithm
  } else {
    EXPECT_STATUS(Sort(r), UNIMPLEMENTED, "available: auto, cpu");
  }
  auto t = U32TopK(4, 1);
  t.mutable_options()->set_algorithm(v1::ALGORITHM_BITONIC);
  EXPECT_STATUS(TopK(t), UNIMPLEMENTED, "'bitonic'");
  r.mutable_options()->set_algorithm(v1::ALGORITHM_CPU);
  EXPECT_TRUE(Sort(r).ok());
}

grpc::Status RunSortStream(v1::SortService::Stub& stub,
                           const std::vector<v1::SortStreamRequest>& messages) {
  grpc::ClientContext context;
  auto stream = stub.SortStream(&context);
  for (const auto& m : messages)
    if (!stream->Write(m)) break;
  stream->WritesDone();
  v1::SortStreamResponse ignored;
  while (stream->Read(&ignored)) {
  }
  return stream->Finish();
}

TEST_F(ErrorStatus, StreamsThatBreakTheFraming) {
  v1::SortStreamRequest with_options;
  with_options.mutable_options()->set_dtype(v1::DTYPE_UINT64);
  with_options.set_keys(std::string(8, 'a'));
  v1::SortStreamRequest half_element;
  half_element.set_keys(std::string(5, 'b'));
  v1::SortStreamRequest data_only;
  data_only.set_keys(std::string(8, 'c'));

  EXPECT_STATUS(RunSortStream(server_->stub(), {with_options, half_element}), INVALID_ARGUMENT,
                "whole number");
  EXPECT_STATUS(RunSortStream(server_->stub(), {with_options, with_options}), INVALID_ARGUMENT,
                "only be sent in the first");
  EXPECT_STATUS(RunSortStream(server_->stub(), {data_only}), INVALID_ARGUMENT,
                "first SortStream message must carry options");
  EXPECT_STATUS(RunSortStream(server_->stub(), {}), INVALID_ARGUMENT, "ended before");
  EXPECT_TRUE(RunSortStream(server_->stub(), {with_options, data_only}).ok());
}

// --- overload, deadlines, cancellation: a backend that waits until told -----------------------

struct ScriptedServer {
  explicit ScriptedServer(ServerConfig config)
      : counters(std::make_shared<ScriptedBackend::Counters>()),
        server(config, std::make_unique<ScriptedBackend>(counters)) {}
  ~ScriptedServer() { counters->release = true; }

  std::future<grpc::Status> SortAsync(std::chrono::milliseconds timeout = {},
                                      std::shared_ptr<grpc::ClientContext> context = nullptr) {
    if (!context) context = std::make_shared<grpc::ClientContext>();
    if (timeout.count() > 0) context->set_deadline(std::chrono::system_clock::now() + timeout);
    return std::async(std::launch::async, [this, context] {
      v1::SortRequest request;
      request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
      request.set_keys(std::string(16, '\3'));
      v1::SortResponse response;
      return server.stub().Sort(context.get(), request, &response);
    });
  }
  void WaitStarted(int n) {
    for (int i = 0; i < 5000 && counters->started.load() < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_GE(counters->started.load(), n);
  }

  std::shared_ptr<ScriptedBackend::Counters> counters;
  TestServer server;
};

TEST(Overload, TooManyInFlightIsRefusedAtOnce) {
  ServerConfig config = LoopbackConfig();
  config.max_inflight = 2;
  ScriptedServer s(config);
  auto a = s.SortAsync();
  auto b = s.SortAsync();
  s.WaitStarted(2);
  const auto t0 = std::chrono::steady_clock::now();
  auto c = s.SortAsync().get();
  EXPECT_EQ(c.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(c.error_message(), HasSubstr("too many requests in flight (limit 2)"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  s.counters->release = true;
  EXPECT_TRUE(a.get().ok());
  EXPECT_TRUE(b.get().ok());
  EXPECT_TRUE(s.SortAsync().get().ok());  // the tickets came back
}

TEST(Deadlines, WorkStopsWhenTheDeadlinePasses) {
  ScriptedServer s(LoopbackConfig());
  auto status = s.SortAsync(std::chrono::milliseconds(200)).get();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  for (int i = 0; i < 2000 && s.counters->stopped_early.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(s.counters->stopped_early.load(), 1);  // the server itself noticed and stopped
}

TEST(Deadlines, JobWhoseDeadlinePassedInTheQueueNeverRuns) {
  ServerConfig config = LoopbackConfig();
  config.workers = 1;
  ScriptedServer s(config);
  auto blocker = s.SortAsync();
  s.WaitStarted(1);
  auto late = s.SortAsync(std::chrono::milliseconds(100));
  EXPECT_EQ(late.get().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  s.counters->release = true;
  EXPECT_TRUE(blocker.get().ok());
  EXPECT_TRUE(s.SortAsync().get().ok());
  EXPECT_EQ(s.counters->started.load(), 2);  // the blocker and the last call; never the late one
}

TEST(Cancellation, CallerCancelStopsTheWork) {
  ScriptedServer s(LoopbackConfig());
  auto context = std::make_shared<grpc::ClientContext>();
  auto call = s.SortAsync({}, context);
  s.WaitStarted(1);
  context->TryCancel();
  EXPECT_EQ(call.get().error_code(), grpc::StatusCode::CANCELLED);
  for (int i = 0; i < 2000 && s.counters->stopped_early.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(s.counters->stopped_early.load(), 1);
}

}  // namespace
}  // namespace gpusort::testing
