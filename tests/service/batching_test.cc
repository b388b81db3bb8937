// Dynamic batching (--batch-delay-us) under concurrent load: many clients on their own connections send
// Sorts of random sizes, dtypes, orders and payloads at once; every answer must be exactly its own
// request's, checked against the reference, and /metrics must show batches of more than one request.
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "tests/service/http_get.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

template <typename T>
bool SortAndCheck(v1::SortService::Stub& stub, std::mt19937_64& rng, std::atomic<int>* batched, std::string* why) {
  const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 3000)(rng);
  const auto pattern = kAllPatterns[rng() % std::size(kAllPatterns)];
  const auto keys = MakeInput<T>(pattern, n, rng());
  const bool descending = rng() % 2, indices = rng() % 2;
  v1::SortRequest request;
  request.mutable_options()->set_dtype(WireDType<T>());
  request.mutable_options()->set_order(descending ? v1::ORDER_DESCENDING : v1::ORDER_ASCENDING);
  request.mutable_options()->set_payload(indices ? v1::PAYLOAD_INDICES : v1::PAYLOAD_NONE);
  request.mutable_options()->set_stable(true);
  request.mutable_options()->set_algorithm(TestAlgorithm());
  request.set_keys(ToBytes(keys));
  v1::SortResponse response;
  grpc::ClientContext context;
  // A fresh connection under this load can fail its first connect (seen in CI); wait for it instead.
  context.set_wait_for_ready(true);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status status = stub.Sort(&context, request, &response);
  if (!status.ok()) {
    *why = status.error_message();
    return false;
  }
  for (const auto& s : response.info().stages()) {
    if (s.stage() == "batch_wait") ++*batched;
  }
  const auto got = FromBytes<T>(response.keys());
  const auto expected = ReferenceSort(keys, descending ? SortOrder::kDescending : SortOrder::kAscending);
  if (!SameBits(got, expected)) {
    *why = "keys differ (n=" + std::to_string(n) + ")";
    return false;
  }
  if (indices) {
    const auto positions = FromBytes<int64_t>(response.indices());
    const auto stable = ReferenceStableArgsort(keys, descending ? SortOrder::kDescending : SortOrder::kAscending);
    if (positions != stable) {
      *why = "indices differ (n=" + std::to_string(n) + ")";
      return false;
    }
  }
  return true;
}

TEST(DynamicBatching, EveryCallerGetsExactlyItsOwnKeysUnderConcurrentLoad) {
  ServerConfig config = LoopbackConfig();
  config.metrics_listen = "127.0.0.1:0";
  config.batch_delay_us = 2000;
  config.batch_max_requests = 16;
  config.max_inflight = 256;
  TestServer server(config);
  constexpr int kClients = 24, kCallsEach = 25;
  std::atomic<int> failures{0}, batched{0};
  std::string first_failure;
  std::mutex failure_mutex;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto stub = server.NewStub();
      std::mt19937_64 rng(1000 + c);
      for (int i = 0; i < kCallsEach; ++i) {
        std::string why;
        bool ok = false;
        switch (rng() % 3) {
          case 0: ok = SortAndCheck<uint32_t>(*stub, rng, &batched, &why); break;
          case 1: ok = SortAndCheck<float>(*stub, rng, &batched, &why); break;
          default: ok = SortAndCheck<int64_t>(*stub, rng, &batched, &why); break;
        }
        if (!ok) {
          ++failures;
          std::lock_guard lock(failure_mutex);
          if (first_failure.empty()) first_failure = why;
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(failures.load(), 0) << "first failure: " << first_failure;
  EXPECT_EQ(batched.load(), kClients * kCallsEach) << "every call should have gone through the batcher";
  const std::string metrics = HttpGet(server.server().metrics_port(), "/metrics");
  const double batches = MetricValue(metrics, "gpusort_batch_size_count");
  const double requests = MetricValue(metrics, "gpusort_batch_size_sum");
  EXPECT_EQ(requests, kClients * kCallsEach);
  EXPECT_GT(batches, 0);
  EXPECT_LT(batches, requests) << "no batch held more than one request";
  EXPECT_EQ(MetricValue(metrics, "gpusort_batch_queue_depth"), 0);
  EXPECT_GT(MetricValue(metrics, "gpusort_batch_wait_seconds_count"), 0);
}

TEST(DynamicBatching, RequestsOverTheKeyLimitRunAlone) {
  ServerConfig config = LoopbackConfig();
  config.batch_delay_us = 1000;
  config.batch_max_keys = 100;
  TestServer server(config);
  const auto keys = MakeInput<uint32_t>(Pattern::kRandom, 101, 4);
  v1::SortRequest request;
  request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  request.mutable_options()->set_algorithm(TestAlgorithm());
  request.set_keys(ToBytes(keys));
  v1::SortResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(server.stub().Sort(&context, request, &response).ok());
  for (const auto& s : response.info().stages()) EXPECT_NE(s.stage(), "batch_wait");
  EXPECT_EQ(FromBytes<uint32_t>(response.keys()), ReferenceSort(keys, SortOrder::kAscending));
}

}  // namespace
}  // namespace gpusort::testing

namespace gpusort::testing {
namespace {

// --inline-max-keys: small AUTO calls answered on gRPC's thread give the same answers, with no queue.
TEST(InlineSmallCalls, AnswerRightWithoutTheWorkerHop) {
  ServerConfig config = LoopbackConfig();
  config.inline_max_keys = 4096;
  TestServer server(config);
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{4096}, std::size_t{4097}}) {
    const auto keys = MakeInput<float>(Pattern::kSpecials, n, n);
    v1::SortRequest request;
    request.mutable_options()->set_dtype(v1::DTYPE_FLOAT32);
    request.mutable_options()->set_order(v1::ORDER_DESCENDING);
    request.set_keys(ToBytes(keys));
    v1::SortResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(server.stub().Sort(&context, request, &response).ok());
    EXPECT_TRUE(SameBits(FromBytes<float>(response.keys()), ReferenceSort(keys, SortOrder::kDescending)));
    double queue_seconds = -1;
    for (const auto& s : response.info().stages())
      if (s.stage() == "queue") queue_seconds = s.seconds();
    // Inline calls report a queue stage of exactly 0; calls through a worker measure their wait.
    if (n <= 4096) {
      EXPECT_EQ(queue_seconds, 0) << "n=" << n;
    } else {
      EXPECT_GT(queue_seconds, 0) << "n=" << n;
    }

    v1::TopKRequest topk;
    topk.mutable_options()->set_dtype(v1::DTYPE_FLOAT32);
    topk.mutable_options()->set_k(1);
    topk.mutable_options()->set_largest(true);
    topk.mutable_options()->set_sorted(true);
    topk.set_keys(ToBytes(keys));
    v1::TopKResponse top;
    grpc::ClientContext topk_context;
    ASSERT_TRUE(server.stub().TopK(&topk_context, topk, &top).ok());
    EXPECT_TRUE(SameBits(FromBytes<float>(top.values()), ReferenceTopK(keys, 1, 1, true).values));
  }
}

}  // namespace
}  // namespace gpusort::testing
