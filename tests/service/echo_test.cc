// gpusort.v1.EchoService: the bytes come back unchanged, unary and streamed, on the Sort server's port.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gpusort/v1/echo.grpc.pb.h"
#include "tests/service/test_server.h"

namespace gpusort::testing {
namespace {

std::string RandomBytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(Echo, UnaryReturnsTheBytesUnchanged) {
  TestServer server;
  auto stub = v1::EchoService::NewStub(server.channel());
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4097}, std::size_t{8} << 20}) {
    v1::EchoMessage request, response;
    request.set_data(RandomBytes(n, static_cast<unsigned>(n)));
    grpc::ClientContext context;
    grpc::Status status = stub->Echo(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.data(), request.data()) << "n=" << n;
  }
}

TEST(Echo, StreamReturnsEveryMessageInOrder) {
  TestServer server;
  auto stub = v1::EchoService::NewStub(server.channel());
  grpc::ClientContext context;
  auto stream = stub->EchoStream(&context);
  const std::vector<std::size_t> sizes = {3, 0, 1 << 20, 65537, 1};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    v1::EchoMessage out, in;
    out.set_data(RandomBytes(sizes[i], static_cast<unsigned>(i)));
    ASSERT_TRUE(stream->Write(out));
    ASSERT_TRUE(stream->Read(&in));
    EXPECT_EQ(in.data(), out.data()) << "message " << i;
  }
  stream->WritesDone();
  v1::EchoMessage extra;
  EXPECT_FALSE(stream->Read(&extra));
  EXPECT_TRUE(stream->Finish().ok());
}

TEST(Echo, MessagesOverTheServerLimitAreRefused) {
  ServerConfig config = LoopbackConfig();
  config.max_message_bytes = 1 << 20;
  TestServer server(config);
  auto stub = v1::EchoService::NewStub(server.channel());
  v1::EchoMessage request, response;
  request.set_data(RandomBytes((1 << 20) + 1, 5));
  grpc::ClientContext context;
  EXPECT_EQ(stub->Echo(&context, request, &response).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

}  // namespace
}  // namespace gpusort::testing
