// An in-process gpusort server on a loopback port, and helpers to call it, for the service tests.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpusort/v1/sort.grpc.pb.h"
#include "server/backend/backend_factory.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/core/narrow_float.h"
#include "server/service/server.h"

namespace gpusort::testing {

// GPUSORT_TEST_BACKEND=cuda runs the service suites on the CUDA backend (scripts/gpu-loop.sh runs them
// both ways on the GPU machine); unset or "cpu": the CPU backend.
inline std::string TestBackendName() {
  const char* name = std::getenv("GPUSORT_TEST_BACKEND");
  return name && *name ? name : "cpu";
}
inline bool TestingCuda() { return TestBackendName() == "cuda"; }

inline std::unique_ptr<Backend> MakeTestBackend() {
  auto backend = MakeBackend({.backend = TestBackendName()});
  if (!backend.ok()) {
    ADD_FAILURE() << "GPUSORT_TEST_BACKEND=" << TestBackendName() << ": " << backend.status();
    return MakeCpuBackend();
  }
  return std::move(*backend);
}

// The algorithm the tests ask for: on CUDA the GPU's own (AUTO would answer the tests' small arrays on
// the CPU), on the CPU AUTO. And what the replies must then say ran.
inline v1::Algorithm TestAlgorithm() { return TestingCuda() ? v1::ALGORITHM_RADIX : v1::ALGORITHM_AUTO; }
inline v1::Algorithm ExpectedAlgorithm() { return TestingCuda() ? v1::ALGORITHM_RADIX : v1::ALGORITHM_CPU; }
inline v1::Backend ExpectedBackend() { return TestingCuda() ? v1::BACKEND_CUDA : v1::BACKEND_CPU; }

// Sort options for the raw stubs' tests, with TestAlgorithm.
inline v1::SortOptions TestSortOptions(v1::DType dtype, bool descending = false,
                                       v1::Payload payload = v1::PAYLOAD_NONE) {
  v1::SortOptions o;
  o.set_dtype(dtype);
  o.set_order(descending ? v1::ORDER_DESCENDING : v1::ORDER_ASCENDING);
  o.set_payload(payload);
  o.set_algorithm(TestAlgorithm());
  return o;
}

inline ServerConfig LoopbackConfig() {
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.metrics_listen = "";  // metrics tests turn it on: civetweb takes 2 s to stop
  config.backend = "cpu";
  config.log_level = "warn";
  config.drain_timeout_seconds = 10;
  return config;
}

// A directory of this process's own for the test servers' shared-memory sockets, made by mkdtemp so
// that nothing another process left in /tmp (a CI machine's /tmp outlives a run, and pids are reused)
// can sit at a path a test server is about to bind: a file there once made a server refuse to start.
// Mode 0755 in /tmp, which every user may reach: the tests that register as a second user connect to
// its sockets too. Removed with whatever is left in it when the process exits.
class TestSocketDirectory {
 public:
  TestSocketDirectory() {
    char pattern[] = "/tmp/gpusort-test-XXXXXX";
    if (mkdtemp(pattern) == nullptr || chmod(pattern, 0755) != 0) {
      std::fprintf(stderr, "cannot make a socket directory in /tmp: %s\n", std::strerror(errno));
      std::abort();
    }
    path_ = pattern;
  }
  ~TestSocketDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A path for a server's shared-memory socket, unique to this process and call.
inline std::string TestShmSocketPath() {
  static TestSocketDirectory directory;
  static std::atomic<int> next{0};
  return directory.path() + "/" + std::to_string(next++) + ".sock";
}

// LoopbackConfig with shared memory on (--shm-socket).
inline ServerConfig ShmConfig() {
  ServerConfig config = LoopbackConfig();
  config.shm_socket = TestShmSocketPath();
  return config;
}

class TestServer {
 public:
  explicit TestServer(ServerConfig config = LoopbackConfig(),
                      std::unique_ptr<Backend> backend = MakeTestBackend())
      : shm_socket_(config.shm_socket) {
    spdlog::set_level(spdlog::level::from_str(config.log_level));
    auto started = GpusortServer::Start(config, std::move(backend));
    // Thrown, not only reported: every test goes on to call the server, and a null one would crash
    // the whole suite's process. GoogleTest reports the exception as this test's failure.
    if (!started.ok()) throw std::runtime_error("server did not start: " + started.status().ToString());
    server_ = std::move(*started);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    channel_ = grpc::CreateCustomChannel(address(), grpc::InsecureChannelCredentials(), args);
    stub_ = v1::SortService::NewStub(channel_);
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(server_->grpc_port()); }
  const std::string& shm_socket() const { return shm_socket_; }  // empty without shared memory
  GpusortServer& server() { return *server_; }
  v1::SortService::Stub& stub() { return *stub_; }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }

  // A fresh channel (its own connection), for concurrency tests; connected before it is returned.
  // Under load (ten suites at once on two cores) a first connection attempt to this live server failed
  // about once in 600 runs ("failed to connect to all addresses ... No such file or directory"), and a
  // call made without wait_for_ready fails at once on it: a Sort in parts then lost a part. Waiting
  // here lets gRPC retry the connection, as a long-lived client would; the calls themselves still fail
  // on any error of the server's.
  std::unique_ptr<v1::SortService::Stub> NewStub() const {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetInt("gpusort.test.unique", next_unique_++);  // no subchannel sharing
    auto channel = grpc::CreateCustomChannel(address(), grpc::InsecureChannelCredentials(), args);
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(20))) {
      ADD_FAILURE() << "no connection to the test server at " << address() << " within 20 s";
    }
    return v1::SortService::NewStub(channel);
  }

 private:
  std::string shm_socket_;
  std::unique_ptr<GpusortServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::SortService::Stub> stub_;
  mutable std::atomic<int> next_unique_ = 0;
};

template <typename T>
std::string ToBytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

template <typename T>
std::vector<T> FromBytes(const std::string& s) {
  std::vector<T> v(s.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), s.data(), v.size() * sizeof(T));
  return v;
}

template <typename T>
v1::DType WireDType() {
  if constexpr (std::is_same_v<T, int32_t>) return v1::DTYPE_INT32;
  if constexpr (std::is_same_v<T, uint32_t>) return v1::DTYPE_UINT32;
  if constexpr (std::is_same_v<T, int64_t>) return v1::DTYPE_INT64;
  if constexpr (std::is_same_v<T, uint64_t>) return v1::DTYPE_UINT64;
  if constexpr (std::is_same_v<T, float>) return v1::DTYPE_FLOAT32;
  if constexpr (std::is_same_v<T, double>) return v1::DTYPE_FLOAT64;
  if constexpr (std::is_same_v<T, Float16>) return v1::DTYPE_FLOAT16;
  if constexpr (std::is_same_v<T, BFloat16>) return v1::DTYPE_BFLOAT16;
  if constexpr (std::is_same_v<T, int16_t>) return v1::DTYPE_INT16;
  if constexpr (std::is_same_v<T, uint16_t>) return v1::DTYPE_UINT16;
  if constexpr (std::is_same_v<T, int8_t>) return v1::DTYPE_INT8;
  if constexpr (std::is_same_v<T, uint8_t>) return v1::DTYPE_UINT8;
}

}  // namespace gpusort::testing
