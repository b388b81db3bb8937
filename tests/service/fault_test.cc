// Cancel and deadline at every stage of a call: waiting for a worker, receiving a stream, running on
// the backend, and sending the answer. The receiving and answering stages run on the backend under
// test (GPUSORT_TEST_BACKEND=cuda: staged to the GPU and copied back from it); the two others on a
// backend the test holds. After each fault the call's ticket must come back (the servers here admit
// one call at a time, so the next call is served only if it did) and the server must keep serving.
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/service/scripted_backend.h"
#include "tests/service/test_server.h"

namespace gpusort::testing {
namespace {

using Clock = std::chrono::steady_clock;

enum class Fault { kCancel, kDeadline };
const char* Name(Fault f) { return f == Fault::kCancel ? "cancel" : "deadline"; }
grpc::StatusCode Expected(Fault f) {
  return f == Fault::kCancel ? grpc::StatusCode::CANCELLED : grpc::StatusCode::DEADLINE_EXCEEDED;
}

// Arms `fault` on `context`: a deadline `after` from now, or a cancel from another thread after it.
std::thread Arm(Fault fault, grpc::ClientContext& context, std::chrono::milliseconds after) {
  if (fault == Fault::kDeadline) {
    context.set_deadline(std::chrono::system_clock::now() + after);
    return std::thread([] {});
  }
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return std::thread([&context, after] {
    std::this_thread::sleep_for(after);
    context.TryCancel();
  });
}

// On the backend under test by default; the held (scripted) backend is a CPU one and takes AUTO only.
v1::SortRequest SmallSort(v1::Algorithm algorithm = TestAlgorithm()) {
  v1::SortRequest request;
  request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  request.mutable_options()->set_algorithm(algorithm);
  request.set_keys(ToBytes(std::vector<uint32_t>{4, 3, 2, 1}));
  return request;
}

// True once a call is served within `within`: the faulted call gave its ticket back.
bool ServedAgain(v1::SortService::Stub& stub, v1::Algorithm algorithm = TestAlgorithm(),
                 std::chrono::seconds within = std::chrono::seconds(5)) {
  const auto end = Clock::now() + within;
  while (Clock::now() < end) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::SortResponse response;
    if (stub.Sort(&context, SmallSort(algorithm), &response).ok()) {
      return FromBytes<uint32_t>(response.keys()) == std::vector<uint32_t>({1, 2, 3, 4});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

ServerConfig OneAtATime() {
  ServerConfig config = LoopbackConfig();
  config.max_inflight = 1;
  config.inline_max_keys = 0;  // every call through the worker queue
  return config;
}

class Faults : public ::testing::TestWithParam<Fault> {};

TEST_P(Faults, WhileWaitingForAWorker) {
  ServerConfig config = LoopbackConfig();
  config.workers = 1;
  config.max_inflight = 2;
  config.inline_max_keys = 0;
  auto counters = std::make_shared<ScriptedBackend::Counters>();
  TestServer server(config, std::make_unique<ScriptedBackend>(counters));
  auto holder = std::async(std::launch::async, [&] {
    grpc::ClientContext context;
    v1::SortResponse response;
    return server.stub().Sort(&context, SmallSort(v1::ALGORITHM_AUTO), &response);
  });
  for (int i = 0; i < 5000 && counters->started.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(counters->started.load(), 1);
  grpc::ClientContext context;
  std::thread arm = Arm(GetParam(), context, std::chrono::milliseconds(150));
  v1::SortResponse response;
  const grpc::Status queued = server.NewStub()->Sort(&context, SmallSort(v1::ALGORITHM_AUTO), &response);
  arm.join();
  EXPECT_EQ(queued.error_code(), Expected(GetParam())) << queued.error_message();
  // The client knows at once; the server learns of a cancel from the RST_STREAM a moment later (under
  // ASan, later still). Only then does "it never ran" mean anything.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  counters->release = true;
  EXPECT_TRUE(holder.get().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(counters->started.load(), 1) << "the faulted call ran after all";
  EXPECT_TRUE(ServedAgain(server.stub(), v1::ALGORITHM_AUTO));
}

TEST_P(Faults, WhileTheBackendRuns) {
  auto counters = std::make_shared<ScriptedBackend::Counters>();
  TestServer server(OneAtATime(), std::make_unique<ScriptedBackend>(counters));
  grpc::ClientContext context;
  std::thread arm = Arm(GetParam(), context, std::chrono::milliseconds(150));
  v1::SortResponse response;
  const grpc::Status status = server.stub().Sort(&context, SmallSort(v1::ALGORITHM_AUTO), &response);
  arm.join();
  EXPECT_EQ(status.error_code(), Expected(GetParam())) << status.error_message();
  for (int i = 0; i < 2000 && counters->stopped_early.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(counters->stopped_early.load(), 1);  // the backend itself stopped
  counters->release = true;
  EXPECT_TRUE(ServedAgain(server.stub(), v1::ALGORITHM_AUTO));
}

TEST_P(Faults, WhileTheStreamIsStillArriving) {
  TestServer server(OneAtATime());
  grpc::ClientContext context;
  std::thread arm = Arm(GetParam(), context, std::chrono::milliseconds(200));
  auto stream = server.stub().SortStream(&context);
  v1::SortStreamRequest first;
  *first.mutable_options() = SmallSort().options();
  first.set_keys(std::string(1 << 20, '\7'));
  ASSERT_TRUE(stream->Write(first));
  // ...and nothing more: the fault comes while the server waits for the rest.
  v1::SortStreamResponse r;
  EXPECT_FALSE(stream->Read(&r));
  const grpc::Status status = stream->Finish();
  arm.join();
  EXPECT_EQ(status.error_code(), Expected(GetParam())) << status.error_message();
  EXPECT_TRUE(ServedAgain(server.stub()));
}

TEST_P(Faults, WhileTheAnswerIsBeingSent) {
  TestServer server(OneAtATime());
  // The keys are made before the call's deadline starts (slow under ThreadSanitizer).
  const std::size_t n = std::size_t{4} << 20;
  std::vector<uint32_t> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = static_cast<uint32_t>(i * 2654435761u);
  const std::string bytes = ToBytes(keys);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       (GetParam() == Fault::kDeadline ? std::chrono::seconds(3) : std::chrono::seconds(30)));
  auto stream = server.stub().SortStream(&context);
  v1::SortStreamRequest m;
  *m.mutable_options() = SmallSort().options();
  m.set_response_chunk_bytes(16 << 10);  // 1024 chunks
  for (std::size_t pos = 0; pos < bytes.size(); pos += 1 << 20) {
    m.set_keys(bytes.substr(pos, 1 << 20));
    ASSERT_TRUE(stream->Write(m));
    m.Clear();
  }
  stream->WritesDone();
  v1::SortStreamResponse r;
  ASSERT_TRUE(stream->Read(&r));  // the answer has started
  if (GetParam() == Fault::kCancel) {
    context.TryCancel();
  } else {
    while (stream->Read(&r)) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // too slow a reader
  }
  while (stream->Read(&r)) {
  }
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), Expected(GetParam())) << status.error_message();
  EXPECT_TRUE(ServedAgain(server.stub()));
}

INSTANTIATE_TEST_SUITE_P(CancelAndDeadline, Faults, ::testing::Values(Fault::kCancel, Fault::kDeadline),
                         [](const auto& info) { return std::string(Name(info.param)); });

}  // namespace
}  // namespace gpusort::testing
