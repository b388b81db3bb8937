// `gpusort bench`: a load test of a server, or of several balanced over: throughput and latency
// percentiles per load level (bench_runner.h), as a table, JSON or CSV (bench_report.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "client/cli/bench_report.h"
#include "client/cli/bench_runner.h"
#include "client/cli/cli_common.h"
#include "client/cli/dtype_names.h"
#include "client/cli/generate.h"
#include "client/cli/rate_ramp.h"
#include "client/cli/subcommand.h"

namespace gpusort::cli {
namespace {

struct BenchOutput {
  std::string format = "table", path;
  bool progress = false, no_progress = false, fail_on_error = false;
};

// `gpusort bench`: 0 when the run completed (3 with --fail-on-error and failed requests), 2 for flags
// that do not go together, 1 when it could not run or when a measurement had no successful request at
// all (a dead server: nothing was measured, so the report's zeros mean nothing).
int RunAndReport(const BenchConfig& config, const BenchOutput& out) {
  if (absl::Status valid = ValidateBenchConfig(config); !valid.ok()) {
    return Usage(valid);
  }
  std::ofstream file;
  if (!out.path.empty()) {  // opened first, so that a bad path fails before the load, not after
    file.open(out.path, std::ios::binary);
    if (!file) return Fail(absl::PermissionDeniedError("cannot write " + out.path));
  }
  ProgressFn progress;
  if (!out.no_progress && (out.progress || isatty(STDERR_FILENO))) {
    progress = [](const BenchProgress& p) {
      std::fprintf(stderr, "\r%-16s %6.1f s %10llu done %10.1f req/s %8llu errors", p.label.c_str(), p.elapsed_s,
                   static_cast<unsigned long long>(p.completed),
                   p.elapsed_s > 0 ? static_cast<double>(p.completed) / p.elapsed_s : 0.0,
                   static_cast<unsigned long long>(p.errors));
      if (p.final) std::fprintf(stderr, "\n");
    };
  }
  const std::string started_at = Iso8601Utc(std::chrono::system_clock::now());
  auto rows = RunBench(config, progress);
  if (!rows.ok()) return Fail(rows.status());
  const std::string report = out.format == "json"  ? ToJson({config.server, started_at}, *rows)
                             : out.format == "csv" ? ToCsv(*rows)
                                                   : ToTable(*rows);
  if (out.path.empty()) {
    std::fwrite(report.data(), 1, report.size(), stdout);
  } else if (!(file << report).flush()) {
    return Fail(absl::DataLossError("cannot write " + out.path));
  }
  bool failed = false, nothing_measured = false;
  for (const BenchRow& row : *rows) {
    failed |= row.errors > 0;
    nothing_measured |= row.requests == 0;
  }
  if (nothing_measured) {
    std::fprintf(stderr, "gpusort: no request of %s succeeded: nothing was measured\n",
                 rows->size() == 1 ? "the run" : "a measurement");
    return 1;
  }
  return out.fail_on_error && failed ? 3 : 0;
}

CLI::Validator DTypeName() {
  return CLI::Validator(
      [](std::string& name) {
        return ParseDType(name) ? "" : "unknown dtype '" + name + "' (valid: " + DTypeNameList() + ")";
      },
      "DTYPE");
}

class BenchCommand final : public Subcommand {
 public:
  explicit BenchCommand(CLI::App& app)
      : Subcommand(app.add_subcommand("bench", "load-test a server: throughput and latency percentiles")) {
    AddTargetFlags();
    AddLoadFlags();
    AddMeasurementFlags();
    AddDataFlags();
    AddOutputFlags();
  }

  int Run() override {
    static const std::map<std::string, BenchMethod> kMethods = {
        {"sort", BenchMethod::kSort}, {"topk", BenchMethod::kTopK}, {"echo", BenchMethod::kEcho}};
    static const std::map<std::string, BenchTransport> kTransports = {{"auto", BenchTransport::kAuto},
                                                                      {"unary", BenchTransport::kUnary},
                                                                      {"stream", BenchTransport::kStream},
                                                                      {"shm", BenchTransport::kShm},
                                                                      {"device", BenchTransport::kDevice},
                                                                      {"sockets", BenchTransport::kSockets}};
    config_.method = kMethods.at(method_);
    config_.transport = kTransports.at(transport_);
    config_.algorithm = ParseAlgorithmFlag(algorithm_);
    config_.dtype = *ParseDType(dtype_);
    if (!ramp_.empty()) {
      auto steps = RampRates(ramp_);
      if (!steps.ok()) return Usage(steps.status());
      config_.rates = *std::move(steps);
    }
    if (!ramp_linear_.empty()) {
      auto ramp = ParseLinearRamp(ramp_linear_, config_.duration_seconds);
      if (!ramp.ok()) return Usage(ramp.status());
      config_.linear_ramp_from = ramp->from;
      config_.linear_ramp_to = ramp->to;
    }
    config_.dtype_given = app_->count("--dtype") > 0;
    config_.concurrency = sweep_.empty() ? std::vector<int>{concurrency_} : sweep_;
    ClientOptions connection;
    if (absl::Status applied = ApplyConnectionFlags(config_.server, security_, &connection); !applied.ok()) {
      return Usage(applied);
    }
    config_.load_balancing = connection.load_balancing;
    config_.tls = connection.tls;
    config_.bearer_token = connection.bearer_token;
    // An echo goes on one stream unless asked (earlier echo rows stay comparable).
    if (app_->count("--stream-parts") > 0) config_.echo_stream_parts = config_.stream_parts;
    return RunAndReport(config_, output_);
  }

 private:
  // Where the load goes and what each request asks.
  void AddTargetFlags() {
    app_->add_option("--server,-s", config_.server,
                     "server address, or several separated by commas to balance over (or env GPUSORT_SERVER)")
        ->envname("GPUSORT_SERVER")
        ->capture_default_str();
    AddSecurityFlags(app_, &security_);
    app_->add_option("--timeout", config_.timeout_seconds, "deadline of each call in seconds (0: none)");
    app_->add_option("--connections", config_.connections, "gRPC connections, used round-robin")
        ->check(AtLeastOne())
        ->capture_default_str();
    app_->add_option("--method", method_, "sort, topk (the k largest) or echo (gRPC alone)")
        ->check(CLI::IsMember({"sort", "topk", "echo"}))
        ->capture_default_str();
    app_->add_option("--transport", transport_,
                     "auto (the client library's choice, as sort and topk make it: stream from 4 MiB), unary, "
                     "stream, shm (shared memory), device (the keys in GPU memory of this node, registered as a "
                     "device region; needs a gpusort built with CUDA), or sockets (sort only: the keys over the "
                     "server's --data-port in --stream-parts parts)")
        ->check(CLI::IsMember(TransportNames()))
        ->capture_default_str();
    AddShmSocketFlag(app_, &config_.shm_socket);
    app_->add_option("-k", config_.k, "topk: how many (of each row)")->capture_default_str();
    app_->add_option("--rows", config_.rows,
                     "each request's keys as this many equal rows: sort sorts each row, topk selects k per "
                     "row (a 2-D --keys-from .npy gives its rows)")
        ->check(AtLeastOne())
        ->capture_default_str();
    app_->add_flag("--descending", config_.descending, "sort: largest first");
    app_->add_flag("--argsort", config_.argsort, "sort: PAYLOAD_INDICES; topk: indices too");
    app_->add_option("--algorithm,-a", algorithm_)->check(CLI::IsMember(AlgorithmNames()))->capture_default_str();
    app_->add_flag("--fresh-answers", config_.fresh_answers,
                   "sorts and echoes answer into fresh memory each call (default: each thread reuses its answer "
                   "memory, as tcp_floor does)");
    app_->add_option("--chunk-bytes", config_.chunk_bytes, "chunk size of --transport stream")
        ->transform(CLI::AsSizeValue(false))
        ->capture_default_str();
    app_->add_option("--stream-parts", config_.stream_parts,
                     "sort over --transport stream: keys of --stream-parts-from bytes or more go on this many "
                     "streams at once, each on its own connection (1: one stream); echo: the same, only when given")
        ->check(CLI::Range(1, 64))
        ->capture_default_str();
    app_->add_option("--wait-spin-us", config_.wait_spin_us,
                     "--transport shm and device: microseconds each call polls for its answer (yielding its core) "
                     "before its thread sleeps; 0: sleep at once (ClientOptions::wait_spin)")
        ->check(CLI::Range(0, 1000000))
        ->capture_default_str();
    app_->add_option_function<std::string>(
            "--shm-calls", [this](const std::string& how) { config_.shm_calls_on_socket = how == "socket"; },
            "--transport shm and device: where the calls on regions go: \"socket\", as records on --shm-socket "
            "(the default), or \"grpc\" (ClientOptions::shm_calls_on_socket)")
        ->check(CLI::IsMember({"socket", "grpc"}));
    app_->add_option("--stream-parts-from", config_.stream_parts_from_bytes,
                     "the size of keys from which --stream-parts applies (the client library's default: " +
                         std::to_string(ClientOptions{}.stream_parts_from_bytes >> 20) + " MiB)")
        ->transform(CLI::AsSizeValue(false))
        ->capture_default_str();
  }

  // Closed loop (in flight) or open loop (rates, ramps).
  void AddLoadFlags() {
    auto* concurrency_flag = app_->add_option("--concurrency,-c", concurrency_, "closed loop: requests in flight")
                                 ->check(AtLeastOne())
                                 ->capture_default_str();
    auto* sweep_flag =
        app_->add_option("--concurrency-sweep", sweep_, "closed loop at each level, a row each (e.g. 1,4,16,64)")
            ->delimiter(',')
            ->check(AtLeastOne())
            ->excludes(concurrency_flag);
    auto* rate_flag = app_->add_option("--rate", config_.rate, "open loop: requests started per second")
                          ->check(AtLeastOne())
                          ->excludes(concurrency_flag)
                          ->excludes(sweep_flag);
    auto* rates_flag = app_->add_option("--rates", config_.rates, "open loop at each of these rates, a row each")
                           ->delimiter(',')
                           ->excludes(concurrency_flag)
                           ->excludes(sweep_flag);
    auto* ramp_flag =
        app_->add_option("--ramp", ramp_, "open loop stepping FROM:TO:STEP requests/s, a row a step (ghz's step)")
            ->excludes(concurrency_flag)
            ->excludes(sweep_flag)
            ->excludes(rates_flag);
    ramp_linear_flag_ =
        app_->add_option("--ramp-linear", ramp_linear_,
                         "open loop whose rate rises (or falls) in a straight line from FROM to TO requests/s "
                         "over --duration (FROM:TO; ghz's line schedule, continuous), a row per --ramp-interval")
            ->excludes(concurrency_flag)
            ->excludes(sweep_flag)
            ->excludes(rate_flag)
            ->excludes(rates_flag)
            ->excludes(ramp_flag);
    app_->add_option("--ramp-interval", config_.ramp_interval_seconds,
                     "--ramp-linear: seconds of the ramp each row covers")
        ->check(AtLeastOne())
        ->needs(ramp_linear_flag_)
        ->capture_default_str();
  }

  // How long each measurement runs, and when it is stable.
  void AddMeasurementFlags() {
    app_->add_option("--stable", config_.stable_percent,
                     "repeat each measurement until p50 and p99 move less than this many percent")
        ->check(AtLeastOne())
        ->excludes(ramp_linear_flag_);
    app_->add_option("--stable-max", config_.stable_max, "--stable: at most this many measurements a row")
        ->capture_default_str();
    app_->add_option("--max-inflight", config_.max_inflight,
                     "open loop: a request due with this many in flight fails (CLIENT_SATURATED)")
        ->check(AtLeastOne())
        ->capture_default_str();
    auto* duration_flag = app_->add_option("--duration", config_.duration_seconds, "seconds each measurement runs")
                              ->check(AtLeastOne())
                              ->capture_default_str();
    app_->add_option("--requests", config_.requests, "each measurement is this many requests")
        ->check(AtLeastOne())
        ->excludes(duration_flag)
        ->excludes(ramp_linear_flag_);
    app_->add_option("--warmup", config_.warmup_seconds, "seconds before each measurement, not counted")
        ->check(ZeroOrMore())
        ->capture_default_str();
  }

  // The keys each request carries.
  void AddDataFlags() {
    app_->add_option("--dtype,-t", dtype_, kDTypeHelp)->check(DTypeName())->capture_default_str();
    app_->add_option("--count,-n", config_.count, "keys per request (K M G: powers of 1024; or 1e6)")
        ->transform(CLI::AsSizeValue(false).description(""))  // a count of keys: no byte units in --help
        ->transform(ScientificCount())  // CLI11 runs the last transform added first
        ->capture_default_str();
    app_->add_option("--distribution,-d", config_.distribution)
        ->check(CLI::IsMember(Distributions()))
        ->capture_default_str();
    app_->add_option("--seed", config_.seed)->capture_default_str();
    app_->add_option("--payloads", config_.payloads, "distinct arrays that requests cycle through")
        ->check(AtLeastOne())
        ->capture_default_str();
    app_->add_flag("--check", config_.check, "verify every answer (wrong: WRONG_ANSWER errors)");
    app_->add_option("--keys-from", config_.keys_from,
                     "keys from this file (raw, text or .npy; its dtype and count replace --dtype and --count)");
  }

  void AddOutputFlags() {
    app_->add_option("--format", output_.format, "table, json or csv")
        ->check(CLI::IsMember({"table", "json", "csv"}))
        ->capture_default_str();
    app_->add_option("--output,-o", output_.path, "write the report here instead of stdout");
    auto* progress_flag = app_->add_flag("--progress", output_.progress, "progress line on stderr, even if no tty");
    app_->add_flag("--no-progress", output_.no_progress, "no progress line")->excludes(progress_flag);
    app_->add_flag("--fail-on-error", output_.fail_on_error, "exit 3 when any request failed");
  }

  BenchConfig config_;
  BenchOutput output_;
  SecurityFlags security_;
  std::string method_ = "sort", transport_ = "unary", algorithm_ = "auto", dtype_ = "u32";
  std::string ramp_, ramp_linear_;
  int concurrency_ = 1;
  std::vector<int> sweep_;
  CLI::Option* ramp_linear_flag_ = nullptr;  // AddLoadFlags' --ramp-linear, which later flags exclude
};

}  // namespace

std::unique_ptr<Subcommand> AddBenchCommand(CLI::App& app) { return std::make_unique<BenchCommand>(app); }

}  // namespace gpusort::cli
