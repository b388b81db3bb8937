// gpusort::Client with Transport::kSockets: Sorts go over the server's data port (sort.proto, "Sockets
// beside gRPC") in parts, their answers straight into place, the connections kept for the next call;
// what the data port does not carry (values, TopK) goes as with kAuto; a server without a data port
// answers FAILED_PRECONDITION.
#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpusort/client.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

ServerConfig DataPortConfig() {
  ServerConfig config = LoopbackConfig();
  config.data_port = 0;
  return config;
}

ClientOptions SocketOptions(const TestServer& server, int parts = 4) {
  ClientOptions options;
  options.target = server.address();
  options.transport = Transport::kSockets;
  options.stream_parts = parts;
  options.timeout = std::chrono::seconds(60);
  return options;
}

class ClientSockets : public ::testing::Test {
 protected:
  TestServer server_{DataPortConfig()};
};

TEST_F(ClientSockets, SortsAndArgsortsMatchTheReferenceInEveryOrder) {
  Client client(SocketOptions(server_));
  // 3 MiB of u32: three parts of at least 1 MiB.
  const auto keys = MakeInput<uint32_t>(Pattern::kRandom, (3 << 18) + 7, 1);
  for (bool descending : {false, true}) {
    const SortOrder order = descending ? SortOrder::kDescending : SortOrder::kAscending;
    auto sorted = client.Sort(keys, {.descending = descending});
    ASSERT_TRUE(sorted.ok()) << sorted.status();
    EXPECT_TRUE(SameBits(sorted->keys, ReferenceSort(keys, order)));
    auto argsorted = client.Argsort(keys, {.descending = descending});
    ASSERT_TRUE(argsorted.ok()) << argsorted.status();
    EXPECT_EQ(argsorted->indices, ReferenceStableArgsort(keys, order));
  }
  const auto floats = MakeInput<double>(Pattern::kSpecials, 300001, 2);
  auto sorted = client.Sort(floats);
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_TRUE(SameBits(sorted->keys, ReferenceSort(floats, SortOrder::kAscending)));
}

TEST_F(ClientSockets, SmallAndEmptyArraysAndSortIntoReusedMemory) {
  Client client(SocketOptions(server_));
  for (std::size_t n : EdgeSizes()) {
    const auto keys = MakeInput<int32_t>(Pattern::kFewDistinct, n, n);
    std::vector<int32_t> out(n, 12345);  // older values, all to be overwritten
    auto info = client.SortInto(std::span<const int32_t>(keys), std::span<int32_t>(out));
    ASSERT_TRUE(info.ok()) << n << ": " << info.status();
    EXPECT_EQ(out, ReferenceSort(keys, SortOrder::kAscending)) << n;
  }
}

TEST_F(ClientSockets, SeveralThreadsShareOneClientAndItsConnections) {
  Client client(SocketOptions(server_, 2));
  std::vector<std::thread> threads;
  std::atomic<int> right{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3; ++i) {
        const auto keys = MakeInput<uint64_t>(Pattern::kRandom, (1 << 18) + t * 1000 + i, t * 10 + i);
        auto sorted = client.Sort(keys);
        if (sorted.ok() && sorted->keys == ReferenceSort(keys, SortOrder::kAscending)) ++right;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(right.load(), 12);
}

TEST_F(ClientSockets, ValuesAndTopKGoOverGrpc) {
  Client client(SocketOptions(server_));
  const auto keys = MakeInput<float>(Pattern::kRandom, 1000, 3);
  auto top = client.TopK(keys, {.k = 5});
  ASSERT_TRUE(top.ok()) << top.status();
  std::vector<float> expected = ReferenceSort(keys, SortOrder::kDescending);
  expected.resize(5);
  EXPECT_TRUE(SameBits(top->values, expected));
}

TEST(ClientSocketsLimits, APartTheDataPortRefusesFailsTheSortWithTheDataPortsReason) {
  ServerConfig config = DataPortConfig();
  config.data_max_connections = 1;
  TestServer server(config);
  Client client(SocketOptions(server, 4));
  const auto keys = MakeInput<uint32_t>(Pattern::kRandom, 1 << 20, 4);  // 4 MiB: four parts, one connection
  auto sorted = client.Sort(keys);
  ASSERT_FALSE(sorted.ok());
  EXPECT_EQ(sorted.status().code(), absl::StatusCode::kResourceExhausted) << sorted.status();
  EXPECT_THAT(std::string(sorted.status().message()), ::testing::HasSubstr("--data-max-connections"));
}

TEST(ClientSocketsOff, AServerWithoutADataPortAnswersFailedPrecondition) {
  TestServer server;
  Client client(SocketOptions(server));
  auto sorted = client.Sort(std::vector<uint32_t>{3, 1, 2});
  ASSERT_FALSE(sorted.ok());
  EXPECT_EQ(sorted.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(sorted.status().message()), ::testing::HasSubstr("--data-port"));
}

}  // namespace
}  // namespace gpusort::testing
