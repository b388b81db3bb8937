// What `gpusort bench` counts while requests run (Recorder, one per thread) and the row it reports
// for one measurement (BenchRow).
//
// Every latency is kept (8 bytes a request: ten million requests are 80 MB), so percentiles are exact
// nearest-rank values over all requests rather than a histogram's approximation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpusort::cli {

// Error codes besides gRPC's status code names (UNAVAILABLE, DEADLINE_EXCEEDED, ...).
inline constexpr std::string_view kWrongAnswer = "WRONG_ANSWER";        // --check found it wrong
inline constexpr std::string_view kClientSaturated = "CLIENT_SATURATED";  // --max-inflight reached

// The counts of one thread; merged once the threads are done, so recording takes no lock.
// The server's own time in each of its stages for one request (ExecutionInfo.stages), in ms.
using StageTimes = std::vector<std::pair<std::string, double>>;

class Recorder {
 public:
  void Ok(double latency_ms, std::size_t request_bytes, std::size_t response_bytes,
          const StageTimes& stages_ms = {});
  void Error(std::string_view code, std::string_view message);
  void Merge(Recorder&& other);

  uint64_t ok() const { return ok_; }
  uint64_t errors() const;
  uint64_t request_bytes() const { return request_bytes_; }
  uint64_t response_bytes() const { return response_bytes_; }
  const std::vector<double>& latencies_ms() const { return latencies_ms_; }
  const std::map<std::string, uint64_t>& errors_by_code() const { return errors_by_code_; }
  const std::map<std::string, std::string>& first_messages() const { return first_messages_; }
  // Each stage the server reported, in the order first seen, with every successful request's time in it.
  const std::vector<std::pair<std::string, std::vector<double>>>& stages_ms() const { return stages_ms_; }

 private:
  uint64_t ok_ = 0, request_bytes_ = 0, response_bytes_ = 0;
  std::vector<double> latencies_ms_;  // of the requests that succeeded
  std::map<std::string, uint64_t> errors_by_code_;
  std::map<std::string, std::string> first_messages_;  // one example message per code
  std::vector<std::pair<std::string, std::vector<double>>> stages_ms_;
  void AddStage(const std::string& stage, const std::vector<double>& ms);
};

struct LatencySummary {
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, p99_9 = 0, max = 0, min = 0;
  bool operator==(const LatencySummary&) const = default;
};

// Nearest-rank percentile (0 < p <= 100) of an ascending vector: the smallest value with at least p%
// of the values at or below it. 0 for an empty vector.
double Percentile(const std::vector<double>& sorted, double p);
LatencySummary Summarize(std::vector<double> latencies_ms);

// A latency histogram: how many requests took more than the previous bucket's bound and at most
// `le_ms`. Bounds 1-2-5 per decade from 0.01 ms; the buckets from the first to the last one that holds
// a request (empty ones between them included, so that the shape shows).
struct LatencyBucket {
  double le_ms = 0;
  uint64_t count = 0;
  bool operator==(const LatencyBucket&) const = default;
};
std::vector<LatencyBucket> Histogram(const std::vector<double>& latencies_ms);

// The median of each stage's times (StageTimes order): what the server spent where, per request.
StageTimes StageMedians(const std::vector<std::pair<std::string, std::vector<double>>>& stages_ms);

// One measurement: one concurrency level, or the open-loop rate, or one interval of a linear ramp.
struct BenchRow {
  std::string method, transport, dtype;
  uint64_t count = 0;   // keys per request
  int concurrency = 0;  // closed loop; 0 in open loop
  double rate = 0;      // open loop: requests started per second; 0 in closed loop
  int connections = 0;
  double duration_s = 0;  // from the first request's start to the last one's end
  uint64_t requests = 0;  // answered without error
  uint64_t errors = 0;
  std::map<std::string, uint64_t> errors_by_code;
  std::map<std::string, std::string> error_messages;  // an example per code
  // Of the successful requests; bytes are request plus response arrays (keys, values, indices; no
  // gRPC framing), 1 MB = 1e6 bytes.
  double requests_per_s = 0, keys_per_s = 0, mb_per_s = 0;
  // Successful requests only. Open loop: from each request's scheduled start, so that queueing in
  // the client (coordinated omission) shows.
  LatencySummary latency_ms;
  std::vector<LatencyBucket> latency_histogram;  // of the same latencies
  StageTimes stage_p50_ms;  // the server's stages (ExecutionInfo), median over the successful requests
  // Everything else that made the row, so that a JSON or CSV row can be read (and re-run) alone.
  uint64_t k = 0;             // topk
  uint64_t rows = 1;          // equal rows of each request's keys (--rows)
  std::string algorithm;      // as sent (auto, radix, ...)
  std::string distribution;   // of the generated keys; "file" with keys_from
  uint64_t seed = 0;          // of the first payload (payload p: seed + p)
  int payloads = 0;
  bool descending = false, argsort = false, check = false;
  std::string keys_from;      // the --keys-from file, when the keys came from one
  double stable_percent = 0;  // --stable: the bound p50 and p99 had to settle within; 0: off
  int repetitions = 1;        // measurements made for this row (--stable); the row is the last
  bool stable = false;        // --stable: whether p50 and p99 settled before stable_max
  // --ramp-linear: the row is one interval of a linear ramp, from ramp_at_s seconds into it for
  // duration_s; `rate` is the interval's mean scheduled rate, and its requests are those due in it.
  bool linear_ramp = false;
  double ramp_at_s = 0;
  bool operator==(const BenchRow&) const = default;
};

}  // namespace gpusort::cli
