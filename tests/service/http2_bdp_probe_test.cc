// --http2-bdp-probe: gRPC's bandwidth-delay-product probe sends PINGs while a call's data arrives, to
// size its receive windows from their round trips; with the flag false the server sends none. A large
// Echo written frame by frame (raw_http2.h) counts the server's PINGs either way, and the bytes come
// back whole both ways.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "gpusort/v1/echo.pb.h"
#include "tests/service/raw_http2.h"
#include "tests/service/test_server.h"

namespace gpusort {
namespace {

using testing::GrpcFrame;
using testing::LoopbackConfig;
using testing::RawGrpcCall;
using testing::RawHttp2Reply;
using testing::TestServer;

TEST(Http2BdpProbe, OnByDefaultTheServerPingsWhileDataArrivesAndOffItSendsNone) {
  v1::EchoMessage message;
  message.set_data(std::string(std::size_t{2} << 20, '\x5a'));
  const std::string body = GrpcFrame(message.SerializeAsString());
  EXPECT_TRUE(ServerConfig{}.http2_bdp_probe) << "gRPC's default";
  for (const bool probe : {true, false}) {
    SCOPED_TRACE(probe ? "--http2-bdp-probe true" : "--http2-bdp-probe false");
    ServerConfig config = LoopbackConfig();
    config.http2_bdp_probe = probe;
    TestServer server(config);
    const RawHttp2Reply reply =
        RawGrpcCall(server.server().grpc_port(), "/gpusort.v1.EchoService/Echo", {}, body, std::chrono::seconds(60));
    ASSERT_TRUE(reply.stream_closed) << "no answer";
    EXPECT_EQ(reply.Header("grpc-status"), "0") << reply.Header("grpc-message");
    EXPECT_EQ(reply.data, body) << "the echo's bytes";
    if (probe) {
      EXPECT_GT(reply.pings, 0);
    } else {
      EXPECT_EQ(reply.pings, 0);
    }
  }
}

}  // namespace
}  // namespace gpusort
