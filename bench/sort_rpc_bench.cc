// A Sort RPC end to end beside a plain gRPC echo of the same bytes, 1K to 64M uint32 keys: how much of
// a Sort's latency is the service's own (validation, staging, the sort, encode) and how much is gRPC
// moving the bytes anyway. Both are unary calls to the same server: Sort, and the gpusort.v1.EchoService
// it serves beside it (proto/gpusort/v1/echo.proto). The server must run with --max-message-bytes
// 1073741824 so that no size falls back to streaming. Wall clock per call on the client; warm-up, then
// median and p90.
//
//   gpusort-server --backend cuda --max-message-bytes 1073741824 ... &
//   build/bin/sort_rpc_bench --server 127.0.0.1:PORT [--max-keys N] [--json PATH]
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gpusort/client.h"
#include "gpusort/v1/echo.grpc.pb.h"

namespace {

constexpr int kMaxMessage = 1 << 30;

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

template <typename F>
std::vector<double> TimeCalls(int warmup, int runs, F&& call) {
  for (int i = 0; i < warmup; ++i) call();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  std::string server, json_path;
  std::size_t max_keys = std::size_t{1} << 26;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--server") server = argv[i + 1];
    else if (a == "--json") json_path = argv[i + 1];
    else if (a == "--max-keys") max_keys = std::strtoull(argv[i + 1], nullptr, 10);
  }
  if (server.empty()) {
    std::fprintf(stderr, "usage: sort_rpc_bench --server HOST:PORT [--max-keys N] [--json PATH]\n");
    return 2;
  }

  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessage);
  args.SetMaxSendMessageSize(kMaxMessage);
  auto echo_stub = gpusort::v1::EchoService::NewStub(
      grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args));

  gpusort::Client client({.target = server, .timeout = std::chrono::seconds(120),
                          .max_message_bytes = static_cast<std::size_t>(kMaxMessage)});

  std::ofstream json;
  if (!json_path.empty()) json.open(json_path);
  if (json) json << "[\n";
  bool first = true;
  std::printf("%10s %10s %10s %9s %10s  server stages (median ms)\n", "keys", "sort ms", "echo ms", "sort/echo",
              "sort p90");
  std::mt19937 rng(1);
  for (std::size_t n : {std::size_t{1} << 10, std::size_t{1} << 14, std::size_t{1} << 16, std::size_t{1} << 20,
                        std::size_t{1} << 24, std::size_t{1} << 26}) {
    if (n > max_keys) continue;
    std::vector<uint32_t> keys(n);
    for (auto& k : keys) k = rng();
    const int runs = n <= (1u << 20) ? 30 : 7;

    std::map<std::string, std::vector<double>> stages;
    std::vector<double> sort_ms = TimeCalls(2, runs, [&] {
      auto sorted = client.Sort(keys);
      if (!sorted.ok() || sorted->keys.size() != n || !std::is_sorted(sorted->keys.begin(), sorted->keys.end())) {
        std::fprintf(stderr, "sort of %zu keys failed: %s\n", n,
                     sorted.ok() ? "wrong answer" : std::string(sorted.status().message()).c_str());
        std::exit(1);
      }
      for (const auto& s : sorted->info.stages) stages[s.stage].push_back(s.seconds * 1e3);
    });

    gpusort::v1::EchoMessage request;
    request.set_data(reinterpret_cast<const char*>(keys.data()), n * sizeof(uint32_t));
    std::vector<double> echo_ms = TimeCalls(2, runs, [&] {
      grpc::ClientContext context;
      gpusort::v1::EchoMessage response;
      const grpc::Status status = echo_stub->Echo(&context, request, &response);
      if (!status.ok() || response.data().size() != n * sizeof(uint32_t)) {
        std::fprintf(stderr, "echo failed: %s\n", status.error_message().c_str());
        std::exit(1);
      }
    });

    const double sort_median = Percentile(sort_ms, 0.5), echo_median = Percentile(echo_ms, 0.5);
    std::string stage_text;
    for (const auto& [name, values] : stages) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " %s=%.3f", name.c_str(), Percentile(values, 0.5));
      stage_text += buf;
    }
    std::printf("%10zu %10.3f %10.3f %9.2f %10.3f %s\n", n, sort_median, echo_median, sort_median / echo_median,
                Percentile(sort_ms, 0.9), stage_text.c_str());
    std::fflush(stdout);
    if (json) {
      json << (first ? "" : ",\n") << "  {\"n\": " << n << ", \"sort_median_ms\": " << sort_median
           << ", \"sort_p90_ms\": " << Percentile(sort_ms, 0.9) << ", \"echo_median_ms\": " << echo_median
           << ", \"echo_p90_ms\": " << Percentile(echo_ms, 0.9) << ", \"stages\": {";
      bool first_stage = true;
      for (const auto& [name, values] : stages) {
        json << (first_stage ? "" : ", ") << "\"" << name << "\": " << Percentile(values, 0.5);
        first_stage = false;
      }
      json << "}}";
      first = false;
    }
  }
  if (json) json << "\n]\n";
  return 0;
}
