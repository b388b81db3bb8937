// How ClientOptions become a channel: server lists, the load-balancing policy, the retry policy in the
// service config, and options that cannot work failing clearly (client/src/channel_config.h).
#include "client/src/channel_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpusort/client.h"

namespace gpusort::client_internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ServerList, SplitsOnCommasButKeepsResolverTargets) {
  EXPECT_THAT(SplitServerList("a:1"), ElementsAre("a:1"));
  EXPECT_THAT(SplitServerList("a:1, b:2,,c:3"), ElementsAre("a:1", "b:2", "c:3"));
  EXPECT_THAT(SplitServerList("ipv4:127.0.0.1:1,127.0.0.1:2"), ElementsAre("ipv4:127.0.0.1:1,127.0.0.1:2"));
  EXPECT_THAT(SplitServerList("dns:///gpusort-headless:50051"), ElementsAre("dns:///gpusort-headless:50051"));
}

TEST(ServerList, SeveralAddressesBecomeOneStaticListWithTheFirstAsAuthority) {
  ClientOptions options;
  options.targets = {"127.0.0.1:5001", "127.0.0.2:5002", "localhost:5003"};
  auto target = ResolveTarget(options);
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_THAT(target->uri, HasSubstr("ipv4:127.0.0.1:5001,127.0.0.2:5002,"));
  EXPECT_THAT(target->uri, HasSubstr("127.0.0.1:5003"));  // localhost, resolved once
  EXPECT_EQ(target->authority, "127.0.0.1:5001");
  EXPECT_GE(target->servers, 3);

  options.targets = {"[::1]:5001", "[::1]:5002"};
  target = ResolveTarget(options);
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->uri, "ipv6:[::1]:5001,[::1]:5002");
}

TEST(ServerList, OneServerOrAResolverTargetStaysAsGiven) {
  ClientOptions options;
  options.target = "dns:///gpusort-headless.default.svc.cluster.local:50051";
  auto target = ResolveTarget(options);
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(target->uri, options.target);
  EXPECT_EQ(target->servers, 1);
  EXPECT_TRUE(target->authority.empty());
  options.targets = {"localhost:7"};
  EXPECT_EQ(ResolveTarget(options)->uri, "localhost:7");
}

TEST(ServerList, BadListsFailClearly) {
  ClientOptions options;
  options.targets = {"127.0.0.1:1", "[::1]:2"};
  EXPECT_THAT(ResolveTarget(options).status().message(), HasSubstr("all IPv4 or all IPv6"));
  options.targets = {"127.0.0.1:1", "dns:///x:2"};
  EXPECT_THAT(ResolveTarget(options).status().message(), HasSubstr("names a resolver"));
  options.targets = {"127.0.0.1:1", "127.0.0.1"};
  EXPECT_THAT(ResolveTarget(options).status().message(), HasSubstr("host:port"));
  options.targets = {"127.0.0.1:1", "no-such-host.invalid:2"};
  EXPECT_EQ(ResolveTarget(options).status().code(), absl::StatusCode::kUnavailable);

  Client client(options);  // the constructor does not throw; every call says why
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(client.Health().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(client.Sort(std::vector<int32_t>{2, 1}).status().code(), absl::StatusCode::kUnavailable);
}

TEST(LoadBalancing, RoundRobinForSeveralPickFirstForOneUnlessAsked) {
  ClientOptions options;
  EXPECT_EQ(LoadBalancingPolicy(options, 1), "pick_first");
  EXPECT_EQ(LoadBalancingPolicy(options, 3), "round_robin");
  options.load_balancing = "round_robin";
  EXPECT_EQ(LoadBalancingPolicy(options, 1), "round_robin");  // dns:/// over a headless Service
  options.load_balancing = "pick_first";
  EXPECT_EQ(LoadBalancingPolicy(options, 3), "pick_first");
}

TEST(ServiceConfig, RetriesUnavailableOnThePureCallsOnly) {
  const auto config = nlohmann::json::parse(ServiceConfigJson("round_robin", RetryOptions{}));
  EXPECT_EQ(config["loadBalancingConfig"][0].begin().key(), "round_robin");
  EXPECT_EQ(config["healthCheckConfig"]["serviceName"], "gpusort.v1.SortService");
  const auto& method = config["methodConfig"][0];
  std::vector<std::string> names;
  for (const auto& n : method["name"]) names.push_back(n["service"].get<std::string>() + "/" + n.value("method", "*"));
  EXPECT_THAT(names, ElementsAre("gpusort.v1.SortService/Sort", "gpusort.v1.SortService/TopK",
                                 "gpusort.v1.SortService/SortStream", "gpusort.v1.SortService/TopKStream",
                                 "gpusort.v1.EchoService/*"));
  const auto& retry = method["retryPolicy"];
  EXPECT_EQ(retry["maxAttempts"], 4);
  EXPECT_EQ(retry["initialBackoff"], "0.050s");
  EXPECT_EQ(retry["maxBackoff"], "1.000s");
  EXPECT_EQ(retry["retryableStatusCodes"], nlohmann::json::array({"UNAVAILABLE", "CANCELLED"}));

  const auto single = nlohmann::json::parse(ServiceConfigJson("pick_first", {.max_attempts = 1}));
  EXPECT_FALSE(single.contains("methodConfig"));  // retries off
  EXPECT_FALSE(single.contains("healthCheckConfig"));
}

TEST(ClientOptionsCheck, SharedMemoryIsRefusedWhileBalancing) {
  ClientOptions options;
  options.targets = {"127.0.0.1:1", "127.0.0.1:2"};
  Client client(options);
  ASSERT_TRUE(client.status().ok()) << client.status();
  EXPECT_TRUE(client.balancing());
  EXPECT_EQ(client.CreateSharedMemory(4096).status().code(), absl::StatusCode::kFailedPrecondition);
  options.transport = Transport::kSharedMemory;
  Client shm(options);
  EXPECT_EQ(shm.Sort(std::vector<int32_t>{2, 1}).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ClientOptionsCheck, SharedMemoryNeedsTheServersSocket) {
  ClientOptions options;
  options.target = "127.0.0.1:1";
  options.transport = Transport::kSharedMemory;
  Client client(options);
  ASSERT_TRUE(client.status().ok()) << client.status();
  const absl::Status status = client.Sort(std::vector<int32_t>{2, 1}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("shm_socket"));
}

TEST(ClientOptionsCheck, UnreadableTlsFilesFailEveryCall) {
  ClientOptions options;
  options.target = "127.0.0.1:1";
  options.tls.ca_file = "/nonexistent/ca.pem";
  Client client(options);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(client.status().message(), HasSubstr("/nonexistent/ca.pem"));
  options.tls.ca_file.clear();
  options.tls.cert_pem = "-----BEGIN CERTIFICATE-----";
  EXPECT_THAT(Client(options).status().message(), HasSubstr("both a client certificate and its key"));
}

}  // namespace
}  // namespace gpusort::client_internal
