// What one `gpusort bench` run does, as its flags say it: which call, over which transport, with what
// payload, and the shape and length of the load.
#pragma once

#include <cctype>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gpusort/client.h"
#include "client/cli/client_types.h"

namespace gpusort::cli {

enum class BenchMethod { kSort, kTopK, kEcho };
enum class BenchTransport { kAuto, kUnary, kStream, kShm, kDevice, kSockets };

inline std::string MethodName(BenchMethod m) {
  switch (m) {
    case BenchMethod::kSort: return "sort";
    case BenchMethod::kTopK: return "topk";
    case BenchMethod::kEcho: return "echo";
  }
  return "?";
}

inline std::string TransportName(BenchTransport t) {
  switch (t) {
    case BenchTransport::kAuto: return "auto";
    case BenchTransport::kUnary: return "unary";
    case BenchTransport::kStream: return "stream";
    case BenchTransport::kShm: return "shm";
    case BenchTransport::kDevice: return "device";
    case BenchTransport::kSockets: return "sockets";
  }
  return "?";
}

// The --algorithm name of an Algorithm (ALGORITHM_RADIX_SELECT -> "radix_select").
inline std::string AlgorithmFlagName(Algorithm a) {
  std::string name(WireName(a));
  if (name.rfind("ALGORITHM_", 0) == 0) name = name.substr(10);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

struct BenchConfig {
  std::string server = "localhost:50051";  // one server, a comma-separated list, or a gRPC target
  // How to reach it, as ClientOptions has them (the CLI fills them from --load-balancing, --tls-*,
  // --token-file).
  std::string load_balancing;
  TlsOptions tls;
  std::string bearer_token;
  double timeout_seconds = 0;  // deadline of each call; 0: none
  int connections = 1;         // separate gRPC connections; requests go round-robin over them

  BenchMethod method = BenchMethod::kSort;
  BenchTransport transport = BenchTransport::kUnary;
  std::string shm_socket;       // --transport shm: the server's --shm-socket
  int wait_spin_us = 0;         // --transport shm and device: ClientOptions::wait_spin
  bool shm_calls_on_socket = true;  // --shm-calls: ClientOptions::shm_calls_on_socket
  uint64_t k = 10;              // topk: the k largest, in rank order (of each row)
  // Each request's keys form this many equal rows (SortOptions.rows / TopKOptions.rows): a sort sorts
  // each row alone (indices per row), a top-k answers k per row. 1: one array.
  uint64_t rows = 1;
  bool descending = false;      // sort only
  bool argsort = false;         // sort: PAYLOAD_INDICES; topk: values and indices
  Algorithm algorithm = Algorithm::kAuto;
  std::size_t chunk_bytes = ClientOptions{}.stream_chunk_bytes;  // streaming transports
  // Each sort and echo answer in fresh memory (SortRaw) instead of the calling thread's reused memory
  // (SortRawInto), to see what fresh answer memory costs.
  bool fresh_answers = false;
  // sort over --transport stream: SortStream calls, each on its own connection, that carry one sort
  // whose keys reach ClientOptions::stream_parts_from_bytes (1: always one stream)
  int stream_parts = ClientOptions{}.stream_parts;
  // From how many bytes of keys a sort (and an echo with echo_stream_parts) goes in parts
  std::size_t stream_parts_from_bytes = ClientOptions{}.stream_parts_from_bytes;
  // echo over --transport stream: as many EchoStream calls at once, each on its own connection, for
  // the same bytes (the gRPC side of a parted sort); 1, one stream, unless --stream-parts is given
  int echo_stream_parts = 1;

  // Closed loop: one measurement (one row) per level, each level that many requests in flight.
  std::vector<int> concurrency = {1};
  // Open loop when > 0: requests start at this rate on a fixed schedule, whatever the answers do.
  double rate = 0;
  // Open loop at several rates, one row each, in this order (--rates, or --ramp FROM:TO:STEP: ghz's
  // step schedule). Empty: `rate` alone.
  std::vector<double> rates;
  // Open loop whose rate moves in a straight line from linear_ramp_from to linear_ramp_to requests/s
  // over duration_seconds (--ramp-linear FROM:TO; rate_ramp.h), reported as a row per
  // ramp_interval_seconds of it. Both 0: off.
  double linear_ramp_from = 0, linear_ramp_to = 0;
  double ramp_interval_seconds = 1;
  bool linear_ramp() const { return linear_ramp_from != 0 || linear_ramp_to != 0; }
  // > 0: each measurement is repeated until its p50 and p99 both move less than this many percent
  // from the previous repetition (perf_analyzer's stability mode), at most stable_max times; the row is
  // the last repetition's.
  double stable_percent = 0;
  int stable_max = 10;
  int max_inflight = 1024;  // open loop: a request due while this many are in flight is an error

  double duration_seconds = 10;  // each measurement's length, unless `requests` is set
  uint64_t requests = 0;         // > 0: each measurement is exactly this many requests
  double warmup_seconds = 1;     // before each measurement, not counted

  DType dtype = DType::kUint32;
  std::size_t count = 1000;  // keys per request
  std::string distribution = "uniform";
  uint64_t seed = 1;
  int payloads = 4;  // distinct arrays made up front; requests cycle through them
  bool check = false;
  // Keys from a file (raw, text or .npy, as the other subcommands read them) instead of generated
  // ones: one payload, its dtype (.npy) and count replace --dtype and --count. Raw and text files need
  // the dtype given (dtype_given).
  std::string keys_from;
  bool dtype_given = false;
  std::string keys_data;  // the file's keys, read by RunBench
};

// The rules the flags alone cannot express (CLI11 checks each flag; these relate several).
inline absl::Status ValidateBenchConfig(const BenchConfig& c) {
  auto invalid = [](std::string message) { return absl::InvalidArgumentError(std::move(message)); };
  if (c.connections < 1) return invalid("--connections must be at least 1");
  if (c.count < 1) return invalid("--count must be at least 1");
  if (c.payloads < 1) return invalid("--payloads must be at least 1");
  if (c.rows < 1) return invalid("--rows must be at least 1");
  if (c.method == BenchMethod::kEcho && c.rows != 1) return invalid("echo has no rows: it measures gRPC itself");
  if (c.count % c.rows != 0)
    return invalid("--rows must divide --count (" + std::to_string(c.count) + " keys into " + std::to_string(c.rows) +
                   " rows)");
  if (c.method == BenchMethod::kTopK && (c.k < 1 || c.k > c.count / c.rows))
    return invalid(c.rows == 1 ? "-k must be between 1 and --count" : "-k must be between 1 and a row's length");
  if (c.chunk_bytes < 1) return invalid("--chunk-bytes must be at least 1");
  if (c.stream_parts < 1 || c.stream_parts > 64) return invalid("--stream-parts must be 1 to 64");
  if (c.stream_parts_from_bytes < 1) return invalid("--stream-parts-from must be at least 1 byte");
  if (c.echo_stream_parts < 1 || c.echo_stream_parts > 64) return invalid("--stream-parts must be 1 to 64");
  if (c.method == BenchMethod::kEcho && c.transport == BenchTransport::kShm)
    return invalid("echo has no shared-memory form: it measures gRPC itself");
  if (c.transport == BenchTransport::kShm && c.shm_socket.empty())
    return invalid("--transport shm needs --shm-socket: the path of the server's --shm-socket");
  if (c.method == BenchMethod::kEcho && c.transport == BenchTransport::kDevice)
    return invalid("echo has no device-memory form: it measures gRPC itself");
  if (c.transport == BenchTransport::kDevice && c.shm_socket.empty())
    return invalid("--transport device needs --shm-socket: the path of the server's --shm-socket");
  if (c.transport == BenchTransport::kSockets && c.method != BenchMethod::kSort)
    return invalid("--transport sockets carries Sorts only (the server's SortOnSockets)");
  if (c.rate < 0) return invalid("--rate must be positive");
  for (double r : c.rates)
    if (!(r > 0)) return invalid("every rate of --rates / --ramp must be above 0");
  if (c.stable_percent < 0) return invalid("--stable must not be negative");
  if (c.stable_max < 2) return invalid("--stable-max must be at least 2");
  if (c.linear_ramp()) {
    if (!(c.linear_ramp_from > 0) || !(c.linear_ramp_to > 0)) return invalid("--ramp-linear rates must be above 0");
    if (c.rate > 0 || !c.rates.empty())
      return invalid("--ramp-linear sets the rate itself: not with --rate, --rates or --ramp");
    if (c.requests > 0) return invalid("--ramp-linear runs for --duration, not for a number of --requests");
    if (c.stable_percent > 0) return invalid("--stable repeats a measurement at one rate; --ramp-linear has none");
    if (!(c.ramp_interval_seconds > 0)) return invalid("--ramp-interval must be positive");
    if (c.duration_seconds / c.ramp_interval_seconds > 10000)
      return invalid("--ramp-linear would make more than 10000 rows: raise --ramp-interval");
  }
  const bool open_loop = c.rate > 0 || c.linear_ramp();
  if (open_loop && c.max_inflight < 1) return invalid("--max-inflight must be at least 1");
  if (!open_loop && c.concurrency.empty()) return invalid("no concurrency level given");
  for (int level : c.concurrency)
    if (level < 1) return invalid("concurrency levels must be at least 1");
  if (c.requests == 0 && !(c.duration_seconds > 0))
    return invalid("--duration must be positive (or give --requests)");
  if (c.warmup_seconds < 0) return invalid("--warmup must not be negative");
  return absl::OkStatus();
}

}  // namespace gpusort::cli
