// What --server accepts (client/cli/server_address.h): host:port lists as they are, a default port for a
// bare host, gRPC targets with a scheme untouched, and URLs refused with what to write instead.
#include "client/cli/server_address.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpusort::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ServerAddress, AHostWithoutAPortGetsTheServersDefaultPort) {
  EXPECT_THAT(*ServerTargets("127.0.0.1"), ElementsAre("127.0.0.1:50051"));
  EXPECT_THAT(*ServerTargets("localhost"), ElementsAre("localhost:50051"));
  EXPECT_THAT(*ServerTargets("[::1]"), ElementsAre("[::1]:50051"));
  EXPECT_THAT(*ServerTargets("a:7000, b"), ElementsAre("a:7000", "b:50051"));
}

TEST(ServerAddress, AddressesWithPortsAndTargetsWithASchemeStayAsTheyAre) {
  EXPECT_THAT(*ServerTargets("localhost:7000"), ElementsAre("localhost:7000"));
  EXPECT_THAT(*ServerTargets("[::1]:7000"), ElementsAre("[::1]:7000"));
  EXPECT_THAT(*ServerTargets("::1"), ElementsAre("::1"));  // bare IPv6: no port can be added without brackets
  EXPECT_THAT(*ServerTargets("dns:///svc.ns:50051"), ElementsAre("dns:///svc.ns:50051"));
  EXPECT_THAT(*ServerTargets("unix:/run/gpusort.sock"), ElementsAre("unix:/run/gpusort.sock"));
}

TEST(ServerAddress, AUrlOrNothingIsRefusedSayingWhatToWrite) {
  for (const char* url : {"http://localhost:50051", "https://h:1", "a:1,grpc://b:2"}) {
    auto targets = ServerTargets(url);
    EXPECT_EQ(targets.status().code(), absl::StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(std::string(targets.status().message()), HasSubstr("not a URL")) << url;
    EXPECT_THAT(std::string(targets.status().message()), HasSubstr("localhost:50051")) << url;
  }
  EXPECT_THAT(std::string(ServerTargets(" , ").status().message()), HasSubstr("names no server"));
}

}  // namespace
}  // namespace gpusort::cli
