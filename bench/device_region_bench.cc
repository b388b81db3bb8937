// Device regions as their caller sees them (issue 16): this process is a caller on the server's node whose
// keys are already in GPU memory. It allocates device memory exportable as a descriptor, registers it with
// a running gpusort-server (--shm-socket), and times Sort and TopK requests that name it, from the call
// to the reply (steady_clock around the blocking RPC), beside the server's own server_seconds and the
// gRPC floor (an empty Echo on the same channel). torch's anchors run in another process on the same GPU
// (bench/device_region_anchor.py): the issue compares against torch.sort / torch.topk in the caller's own
// process, which needs no RPC at all.
//
//   device_region_bench --target 127.0.0.1:PORT --shm-socket PATH [--runs 20] [--warmup 3]
//
// Each case is timed two ways: as a gRPC call (the raw stub on one channel) and as a call on the
// shared-memory socket itself (gpusort::Client::SortInRegion / TopKInRegion, sort.proto "Calls on the
// shared-memory socket": no HTTP/2 and no hop to a worker), the latter with the client's wait_spin 0 and
// 200 us (a caller that keeps its core awake for the answer; issue 44's "as the caller sees it").
//
// Cases: sort_u32_16M (16M random uint32, ascending, keys only, from one region into another, so every
// call sorts the same keys), topk_f32_256M_k100 (256M floats uniform in [0, 1), k = 100, largest, sorted,
// values and indices). Each answer is checked once against std::sort / the reference top-k on the host.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gpusort/client.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/shared_device_memory.h"
#include "gpusort/shared_memory.h"
#include "gpusort/v1/echo.grpc.pb.h"
#include "gpusort/v1/sort.grpc.pb.h"

namespace {

namespace gk = gpusort::kernels;
namespace v1 = gpusort::v1;

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "device_region_bench: %s\n", why.c_str());
  std::exit(1);
}

struct Options {
  std::string target, shm_socket;
  int runs = 20, warmup = 3;
};

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Die("flag " + flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--target") o.target = value;
    else if (flag == "--shm-socket") o.shm_socket = value;
    else if (flag == "--runs") o.runs = std::stoi(value);
    else if (flag == "--warmup") o.warmup = std::stoi(value);
    else Die("unknown flag " + flag);
  }
  if (o.target.empty() || o.shm_socket.empty()) Die("usage: --target HOST:PORT --shm-socket PATH");
  return o;
}

void Copy(void* dst, const void* src, std::size_t bytes) {
  gk::Stream stream;
  if (!gk::Stream::Create(&stream).ok() || !gk::CopyAnyAsync(dst, src, bytes, stream).ok() ||
      !stream.Synchronize().ok()) {
    Die("copying to or from the device");
  }
}

// Exportable device memory of `bytes`, registered with the server as a device region.
struct Region {
  gk::ExportableDeviceMemory memory;
  std::unique_ptr<gpusort::SharedMemoryRegistration> registration;

  Region(const Options& o, std::size_t bytes) {
    if (gk::Status s = gk::ExportableDeviceMemory::Allocate(bytes, 0, &memory); !s.ok()) Die(s.message());
    int fd = -1;
    if (gk::Status s = memory.ExportFd(&fd); !s.ok()) Die(s.message());
    auto r = gpusort::SharedMemoryRegistration::RegisterDeviceMemory(o.shm_socket, fd, bytes);
    close(fd);
    if (!r.ok()) Die("registering: " + std::string(r.status().message()));
    registration = *std::move(r);
  }
  // The whole region, as the raw requests below name it.
  v1::RegionRef Whole() const {
    v1::RegionRef ref;
    ref.set_region_id(registration->id());
    ref.set_length(memory.size());
    return ref;
  }
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Timing {
  double caller_ms = 0, server_ms = 0;
  std::string stages;  // the server's stages, each its median in ms, in the order they happened
};

// What a call's answer said: the server's time and its stages (from either kind of ExecutionInfo).
struct Answered {
  double server_ms = 0;
  std::vector<std::pair<std::string, double>> stages_ms;
};

Answered FromProto(const v1::ExecutionInfo& info) {
  Answered a{info.server_seconds() * 1e3, {}};
  for (const auto& stage : info.stages()) a.stages_ms.emplace_back(stage.stage(), stage.seconds() * 1e3);
  return a;
}

Answered FromClient(const gpusort::client::ExecutionInfo& info) {
  Answered a{info.server_seconds * 1e3, {}};
  for (const auto& stage : info.stages) a.stages_ms.emplace_back(stage.stage, stage.seconds * 1e3);
  return a;
}

// `call` makes one request and returns what its answer said; runs warm-up + runs times, one at a time.
Timing Time(const Options& o, const std::function<Answered()>& call) {
  std::vector<double> caller, server;
  std::vector<std::string> names;
  std::vector<std::vector<double>> stage_ms;
  for (int i = 0; i < o.warmup + o.runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const Answered info = call();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i < o.warmup) continue;
    caller.push_back(ms);
    server.push_back(info.server_ms);
    for (std::size_t s = 0; s < info.stages_ms.size(); ++s) {
      if (s >= names.size()) {
        names.push_back(info.stages_ms[s].first);
        stage_ms.emplace_back();
      }
      stage_ms[s].push_back(info.stages_ms[s].second);
    }
  }
  Timing t{Median(caller), Median(server), ""};
  for (std::size_t s = 0; s < names.size(); ++s) {
    char part[96];
    std::snprintf(part, sizeof(part), "%s%s %.3f", s ? ", " : "", names[s].c_str(), Median(stage_ms[s]));
    t.stages += part;
  }
  return t;
}

void Report(const char* name, const Timing& t, double echo_ms) {
  std::printf("| %s | %.3f | %.3f | %.3f | %s |\n", name, t.caller_ms, t.server_ms, echo_ms, t.stages.c_str());
}

double EchoFloor(const Options& o, const std::shared_ptr<grpc::Channel>& channel) {
  auto echo = v1::EchoService::NewStub(channel);
  return Time(o, [&] {
           v1::EchoMessage in, out;
           grpc::ClientContext context;
           if (!echo->Echo(&context, in, &out).ok()) Die("echo failed");
           return Answered();
         }).caller_ms;
}

// The same case timed over gRPC and on the socket (each wait_spin).
struct Ways {
  Timing grpc, socket, socket_spin;
};

gpusort::Client SocketClient(const Options& o, std::chrono::microseconds spin) {
  gpusort::ClientOptions options;
  options.target = o.target;
  options.shm_socket = o.shm_socket;
  options.wait_spin = spin;
  return gpusort::Client(options);
}

gpusort::client::RegionRef RefOf(const Region& r) { return r.registration->Ref(0, r.memory.size()); }

Ways SortU32(const Options& o, v1::SortService::Stub& stub) {
  const std::size_t n = std::size_t{16} << 20;
  std::vector<std::uint32_t> keys(n);
  std::mt19937_64 rng(1);
  for (auto& k : keys) k = static_cast<std::uint32_t>(rng());
  Region in(o, n * 4), out(o, n * 4);
  Copy(in.memory.data(), keys.data(), n * 4);
  v1::SortRequest request;
  request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  *request.mutable_keys_region() = in.Whole();
  *request.mutable_output_region() = out.Whole();
  auto call = [&] {
    v1::SortResponse response;
    grpc::ClientContext context;
    if (grpc::Status s = stub.Sort(&context, request, &response); !s.ok()) Die("Sort: " + s.error_message());
    return FromProto(response.info());
  };
  auto on_socket = [&](gpusort::Client& client) {
    return [&] {
      auto info = client.SortInRegion(gpusort::client::DType::kUint32, {}, gpusort::client::Payload::kNone,
                                      RefOf(in), RefOf(out));
      if (!info.ok()) Die("SortInRegion: " + std::string(info.status().message()));
      return FromClient(*info);
    };
  };
  gpusort::Client socket = SocketClient(o, std::chrono::microseconds(0));
  gpusort::Client spinning = SocketClient(o, std::chrono::microseconds(200));
  std::sort(keys.begin(), keys.end());
  for (const auto& once : {std::function<Answered()>(call), std::function<Answered()>(on_socket(socket))}) {
    Copy(out.memory.data(), in.memory.data(), 4);  // a stale answer must not pass for a new one
    once();
    std::vector<std::uint32_t> got(n);
    Copy(got.data(), out.memory.data(), n * 4);
    if (got != keys) Die("sort_u32_16M: the answer differs from std::sort");
  }
  return {Time(o, call), Time(o, on_socket(socket)), Time(o, on_socket(spinning))};
}

Ways TopKF32(const Options& o, v1::SortService::Stub& stub) {
  const std::size_t n = std::size_t{256} << 20, k = 100;
  std::vector<float> keys(n);
  std::mt19937_64 rng(2);
  for (auto& x : keys) x = static_cast<float>(rng() >> 40) * 0x1p-24f;  // torch.rand's grid
  Region in(o, n * 4), values(o, k * 4), indices(o, k * 8);
  Copy(in.memory.data(), keys.data(), n * 4);
  v1::TopKRequest request;
  request.mutable_options()->set_dtype(v1::DTYPE_FLOAT32);
  request.mutable_options()->set_k(k);
  request.mutable_options()->set_largest(true);
  request.mutable_options()->set_sorted(true);
  *request.mutable_keys_region() = in.Whole();
  *request.mutable_values_region() = values.Whole();
  *request.mutable_indices_region() = indices.Whole();
  auto call = [&] {
    v1::TopKResponse response;
    grpc::ClientContext context;
    if (grpc::Status s = stub.TopK(&context, request, &response); !s.ok()) Die("TopK: " + s.error_message());
    return FromProto(response.info());
  };
  gpusort::TopKOptions options;
  options.k = k;
  auto on_socket = [&](gpusort::Client& client) {
    return [&] {
      const gpusort::client::RegionRef values_ref = RefOf(values), indices_ref = RefOf(indices);
      auto info = client.TopKInRegion(gpusort::client::DType::kFloat32, options, RefOf(in), &values_ref, &indices_ref);
      if (!info.ok()) Die("TopKInRegion: " + std::string(info.status().message()));
      return FromClient(*info);
    };
  };
  gpusort::Client socket = SocketClient(o, std::chrono::microseconds(0));
  gpusort::Client spinning = SocketClient(o, std::chrono::microseconds(200));
  std::vector<std::int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](std::int64_t a, std::int64_t b) {
    return keys[a] != keys[b] ? keys[a] > keys[b] : a < b;
  });
  for (const auto& once : {std::function<Answered()>(call), std::function<Answered()>(on_socket(socket))}) {
    std::vector<std::int64_t> got(k, -1);
    Copy(indices.memory.data(), got.data(), k * 8);  // a stale answer must not pass for a new one
    once();
    Copy(got.data(), indices.memory.data(), k * 8);
    if (!std::equal(got.begin(), got.end(), order.begin())) Die("topk_f32_256M_k100: the answer differs");
  }
  return {Time(o, call), Time(o, on_socket(socket)), Time(o, on_socket(spinning))};
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  grpc::ChannelArguments args;
  auto channel = grpc::CreateCustomChannel(o.target, grpc::InsecureChannelCredentials(), args);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(30))) {
    Die("no server at " + o.target);
  }
  auto stub = v1::SortService::NewStub(channel);
  const double echo = EchoFloor(o, channel);
  std::printf("median of %d after %d warm-up, one call at a time\n\n", o.runs, o.warmup);
  std::printf("| case | caller ms (call to reply) | server_seconds ms | empty Echo ms | server stages, ms |\n"
              "|---|---:|---:|---:|---|\n");
  const Ways sort = SortU32(o, *stub);
  const Ways topk = TopKF32(o, *stub);
  Report("sort_u32_16M, gRPC call", sort.grpc, echo);
  Report("sort_u32_16M, socket call", sort.socket, echo);
  Report("sort_u32_16M, socket call, wait_spin 200 us", sort.socket_spin, echo);
  Report("topk_f32_256M_k100, gRPC call", topk.grpc, echo);
  Report("topk_f32_256M_k100, socket call", topk.socket, echo);
  Report("topk_f32_256M_k100, socket call, wait_spin 200 us", topk.socket_spin, echo);
  return 0;
}
