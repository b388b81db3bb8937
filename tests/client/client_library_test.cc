// gpusort::Client against an in-process server: typed calls for every dtype, payloads, streaming by
// itself for arrays larger than one message, errors as status values, request ids, health.
#include "gpusort/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/service/test_server.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

template <typename T>
class ClientTyped : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ServerConfig config = LoopbackConfig();
    config.max_message_bytes = 256 << 10;  // small, so that 1M keys must stream
    server_ = new TestServer(config);
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  // The client's limit is left at its 64 MiB default on purpose: it learns the server's from the
  // refusal and streams, as a caller that does not know the server's settings would need.
  Client MakeClient(std::size_t max_message_bytes = 64u << 20) {
    ClientOptions options;
    options.target = server_->address();
    options.max_message_bytes = max_message_bytes;
    options.stream_chunk_bytes = 100000;
    return Client(options);
  }
  static TestServer* server_;
};
template <typename T>
TestServer* ClientTyped<T>::server_ = nullptr;

using AllKeyTypes = ::testing::Types<int32_t, uint32_t, int64_t, uint64_t, float, double, int16_t, uint16_t, int8_t, uint8_t>;
TYPED_TEST_SUITE(ClientTyped, AllKeyTypes);

TYPED_TEST(ClientTyped, SortArgsortValuesAndTopK) {
  using T = TypeParam;
  Client client = this->MakeClient();
  const auto keys = MakeInput<T>(Pattern::kSpecials, 5000, 17);

  auto sorted = client.Sort(keys, {.descending = true});
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_TRUE(SameBits(sorted->keys, ReferenceSort(keys, SortOrder::kDescending)));

  auto argsorted = client.Argsort(keys, {.stable = true});
  ASSERT_TRUE(argsorted.ok()) << argsorted.status();
  EXPECT_EQ(argsorted->indices, ReferenceStableArgsort(keys, SortOrder::kAscending));

  std::string values(keys.size() * 2, '\0');
  for (std::size_t i = 0; i < keys.size(); ++i) {
    values[2 * i] = static_cast<char>(i & 0xff);
    values[2 * i + 1] = static_cast<char>(i >> 8);
  }
  auto with_values =
      client.SortWithValues(std::span<const T>(keys), values, 2, {.stable = true});
  ASSERT_TRUE(with_values.ok()) << with_values.status();
  const auto perm = ReferenceStableArgsort(keys, SortOrder::kAscending);
  std::string expected;
  for (int64_t p : perm) expected.append(values, p * 2, 2);
  EXPECT_EQ(with_values->values, expected);

  auto top = client.TopK(keys, {.k = 50, .largest = false, .rows = 5});
  ASSERT_TRUE(top.ok()) << top.status();
  const auto want = ReferenceTopK(keys, 5, 50, false);
  EXPECT_TRUE(SameBits(top->values, want.values));
  EXPECT_EQ(top->indices, want.indices);
}

TYPED_TEST(ClientTyped, LargeArraysStreamByThemselves) {
  using T = TypeParam;
  const auto keys = MakeInput<T>(Pattern::kRandom, (1 << 20) + 7, 23);
  for (std::size_t client_limit : {std::size_t{64} << 20, std::size_t{200} << 10}) {
    Client client = this->MakeClient(client_limit);
    auto raw = client.SortRaw({.dtype = WireDTypeOf<T>(),
                               .keys = {reinterpret_cast<const char*>(keys.data()),
                                        keys.size() * sizeof(T)},
                               .options = {},
                               .payload = client::Payload::kIndices,
                               .values = {},
                               .value_width = 0});
    ASSERT_TRUE(raw.ok()) << raw.status();
    EXPECT_TRUE(raw->streamed);
    auto sorted = client.Sort(keys);
    ASSERT_TRUE(sorted.ok()) << sorted.status();
    EXPECT_TRUE(SameBits(sorted->keys, ReferenceSort(keys, SortOrder::kAscending)));
    auto top = client.TopK(keys, {.k = keys.size() / 2});  // an answer larger than one message
    ASSERT_TRUE(top.ok()) << top.status();
    EXPECT_EQ(top->indices.size(), keys.size() / 2);
    EXPECT_TRUE(SameBits(top->values, ReferenceTopK(keys, 1, keys.size() / 2, true).values));
  }
}

// Segment offsets go out with Sort and TopK on every transport, and the answer's size follows them
// (TopKResultCount: min(k, length) per segment), which the streamed and shared-memory paths depend on.
TEST(Client, SegmentsSortAndTopKOnEveryTransport) {
  TestServer server(ShmConfig());
  const auto keys = MakeInput<float>(Pattern::kSpecials, 30011, 5);
  const std::vector<uint64_t> offsets = SegmentOffsetsOf(keys.size(), {0, 1, 5000, 77, 0, 12000});
  for (Transport transport : {Transport::kUnary, Transport::kStream, Transport::kSharedMemory}) {
    ClientOptions options;
    options.target = server.address();
    options.shm_socket = server.shm_socket();
    options.transport = transport;
    Client client(options);
    const std::string what = "transport " + std::to_string(static_cast<int>(transport));
    auto sorted = client.Argsort(keys, {.descending = true, .stable = true, .segment_offsets = offsets});
    ASSERT_TRUE(sorted.ok()) << what << ": " << sorted.status();
    EXPECT_TRUE(SameBits(sorted->keys, ReferenceSegmentSort(keys, offsets, SortOrder::kDescending))) << what;
    EXPECT_EQ(sorted->indices, ReferenceSegmentStableArgsort(keys, offsets, SortOrder::kDescending)) << what;
    const TopKOptions top_options{.k = 100, .largest = false, .segment_offsets = offsets};
    EXPECT_EQ(TopKResultCount(top_options), 2u * (1 + 100 + 77 + 100)) << what;  // two rounds of the lengths
    auto top = client.TopK(keys, top_options);
    ASSERT_TRUE(top.ok()) << what << ": " << top.status();
    const auto want = ReferenceSegmentTopK(keys, offsets, 100, false);
    EXPECT_TRUE(SameBits(top->values, want.values)) << what;
    EXPECT_EQ(top->indices, want.indices) << what;
  }
}

TEST(Client, ErrorsComeBackAsStatusValues) {
  TestServer server;
  Client client({.target = server.address()});
  std::vector<uint32_t> keys = {1, 2, 3};
  auto bad_k = client.TopK(keys, {.k = 4});
  EXPECT_EQ(bad_k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_k.status().message()), ::testing::HasSubstr("row length 3"));
  // The CPU backend has no GPU algorithms; the CUDA backend's odd-even sort takes at most 4096 keys.
  const std::vector<uint32_t> many(5000, 7);
  auto bad_algorithm = client.Sort(many, {.algorithm = client::Algorithm::kOddEven});
  EXPECT_EQ(bad_algorithm.status().code(),
            TestingCuda() ? absl::StatusCode::kInvalidArgument : absl::StatusCode::kUnimplemented);

  // Time enough for the retry policy's attempts to end first: with 500 ms a slow machine (a sanitizer
  // build beside another build) hit the deadline before the last refused attempt.
  Client nowhere({.target = "127.0.0.1:1", .timeout = std::chrono::seconds(5)});
  EXPECT_EQ(nowhere.Sort(keys).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(nowhere.Health().ok());
}

TEST(Client, RequestIdAndHealth) {
  TestServer server;
  Client client({.target = server.address(), .request_id = "trace-42"});
  auto sorted = client.Sort(std::vector<double>{2.0, -0.0, 0.0});
  ASSERT_TRUE(sorted.ok());
  EXPECT_EQ(sorted->info.request_id, "trace-42");
  EXPECT_EQ(sorted->info.backend, client::Backend::kCpu);  // 3 keys: AUTO answers on the CPU either way
  EXPECT_TRUE(std::signbit(sorted->keys[0]));  // -0.0 before +0.0
  auto healthy = client.Health();
  ASSERT_TRUE(healthy.ok());
  EXPECT_TRUE(*healthy);
  EXPECT_TRUE(*client.Health("gpusort.v1.SortService"));
}

// A Client moves with its connection and state: the moved-to one serves, the moved-from one may be
// assigned a new Client, and Clients can be kept in a vector.
TEST(Client, MovesWithItsConnection) {
  TestServer server;
  Client first({.target = server.address()});
  Client moved = std::move(first);
  auto sorted = moved.Sort(std::vector<int32_t>{3, 1, 2});
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_EQ(sorted->keys, (std::vector<int32_t>{1, 2, 3}));
  first = Client({.target = server.address()});
  EXPECT_TRUE(first.Sort(std::vector<int32_t>{1}).ok());
  std::vector<Client> pool;
  pool.push_back(std::move(moved));
  pool.push_back(std::move(first));
  pool.emplace_back(ClientOptions{.target = server.address()});
  for (Client& c : pool) EXPECT_TRUE(c.Health().value_or(false));
}

}  // namespace
}  // namespace gpusort::testing
