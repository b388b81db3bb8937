// gpusort: the command line on the client library. Subcommands: gen, sort, topk, health, bench.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "client/cli/array_file.h"
#include "client/cli/bench_report.h"
#include "client/cli/bench_runner.h"
#include "client/cli/connection_flags.h"
#include "client/cli/dtype_names.h"
#include "client/cli/generate.h"
#include "client/cli/rate_ramp.h"
#include "client/cli/sort_values.h"
#include "gpusort/client.h"

namespace gpusort::cli {
namespace {

// Every subcommand's exit codes (README "Exit codes").
constexpr int kExitFailed = 1, kExitUsage = 2;
constexpr char kExitCodes[] =
    "Exit codes: 0 done; 1 failed (the server's answer, a file, a connection: the message says which; "
    "health: a server not SERVING); 2 bad usage (a flag or value); 3 bench --fail-on-error saw a failed "
    "request.\n";

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "gpusort: %s: %s\n", absl::StatusCodeToString(status.code()).c_str(),
               std::string(status.message()).c_str());
  return kExitFailed;
}

struct Connection {
  std::string server = "localhost:50051";
  double timeout_seconds = 0;
  bool verbose = false;
  std::string transport = "auto";
  std::string shm_socket;  // --transport shm: the server's --shm-socket
  SecurityFlags security;
};

void AddConnectionFlags(CLI::App* app, Connection* c) {
  app->add_option("--server,-s", c->server,
                  "server address, or several separated by commas to balance over (or env GPUSORT_SERVER)")
      ->envname("GPUSORT_SERVER")
      ->capture_default_str();
  app->add_option("--timeout", c->timeout_seconds, "deadline in seconds (0: none)");
  app->add_flag("--verbose,-v", c->verbose, "print how the server ran it");
  app->add_option("--transport", c->transport,
                  "auto (stream from 4 MiB), unary, stream, or shm (shared memory; server on this host)")
      ->check(CLI::IsMember({"auto", "unary", "stream", "shm"}))
      ->capture_default_str();
  AddShmSocketFlag(app, &c->shm_socket);
  AddSecurityFlags(app, &c->security);
}

// A progress line on stderr for long transfers, only when stderr is a terminal.
std::function<void(std::string_view, std::size_t, std::size_t)> ProgressLine() {
  if (!isatty(STDERR_FILENO)) return nullptr;
  return [last = std::chrono::steady_clock::time_point{}](std::string_view stage, std::size_t done,
                                                          std::size_t total) mutable {
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - last < std::chrono::milliseconds(100)) return;
    last = now;
    std::fprintf(stderr, "\r%-7s %8.1f / %.1f MiB", std::string(stage).c_str(), done / 1048576.0,
                 total / 1048576.0);
    if (done >= total) std::fprintf(stderr, "\n");
  };
}

absl::StatusOr<std::unique_ptr<Client>> MakeClient(const Connection& c) {
  ClientOptions options;
  if (absl::Status applied = ApplyConnectionFlags(c.server, c.security, &options); !applied.ok()) return applied;
  options.timeout = std::chrono::milliseconds(static_cast<long long>(c.timeout_seconds * 1000));
  options.progress = ProgressLine();
  options.transport = c.transport == "unary"    ? Transport::kUnary
                      : c.transport == "stream" ? Transport::kStream
                      : c.transport == "shm"    ? Transport::kSharedMemory
                                                : Transport::kAuto;
  options.shm_socket = c.shm_socket;
  if (options.transport == Transport::kSharedMemory && options.shm_socket.empty()) {
    return absl::InvalidArgumentError("--transport shm needs --shm-socket: the path of the server's --shm-socket");
  }
  auto client = std::make_unique<Client>(options);
  if (!client->status().ok()) return client->status();
  return client;
}

// Prints like Fail, for a flag or value the command cannot use (exit 2).
int Usage(const absl::Status& status) {
  Fail(status);
  return kExitUsage;
}

// `gpusort health`: every server of --server (a comma-separated list is checked one by one, not
// balanced over), one line each; 0 only when every one is SERVING.
int Health(const Connection& connection, const std::string& service) {
  const std::vector<std::string> servers = SplitServerList(connection.server);
  bool all_serving = !servers.empty();
  for (const std::string& server : servers) {
    Connection one = connection;
    one.server = server;
    auto made = MakeClient(one);
    absl::StatusOr<bool> serving = made.ok() ? (*made)->Health(service) : absl::StatusOr<bool>(made.status());
    const std::string state = !serving.ok() ? absl::StatusCodeToString(serving.status().code())
                              : *serving    ? "SERVING"
                                            : "NOT_SERVING";
    if (servers.size() == 1 && !serving.ok()) return Fail(serving.status());
    if (servers.size() == 1) {
      std::printf("%s\n", state.c_str());
    } else {
      std::printf("%s %s%s%s\n", server.c_str(), state.c_str(), serving.ok() ? "" : ": ",
                  serving.ok() ? "" : std::string(serving.status().message()).c_str());
    }
    all_serving &= serving.ok() && *serving;
  }
  return all_serving ? 0 : 1;
}

void PrintInfo(const ExecutionInfo& info, bool streamed, const std::string& transport) {
  std::fprintf(stderr, "algorithm %s, backend %s, device %s, request %s, %s\n",
               std::string(WireName(info.algorithm)).c_str(), std::string(WireName(info.backend)).c_str(),
               info.device.c_str(), info.request_id.c_str(),
               streamed ? "streamed" : transport == "shm" ? "shared memory" : "unary");
  for (const auto& s : info.stages) std::fprintf(stderr, "  %-10s %10.3f ms\n", s.stage.c_str(), s.seconds * 1e3);
  std::fprintf(stderr, "  %-10s %10.3f ms\n", "server", info.server_seconds * 1e3);
}


// The short dtype names, for --help (ParseDTypeFlag's error lists every accepted name).
constexpr char kDTypeHelp[] = "i32 u32 i64 u64 f32 f64 f16 bf16 i16 u16 i8 u8";

struct InputFlags {
  std::string in, out, format, in_format, out_format, dtype;
};

void AddFileFlags(CLI::App* app, InputFlags* f) {
  app->add_option("--in,-i", f->in, "input file (raw, text or .npy)")->required();
  app->add_option("--out,-o", f->out, "output file")->required();
  app->add_option("--dtype,-t", f->dtype, std::string(kDTypeHelp) + " (required unless .npy)");
  app->add_option("--format", f->format, "raw, text or npy for both files (default: by extension)");
  app->add_option("--in-format", f->in_format, "format of --in");
  app->add_option("--out-format", f->out_format, "format of --out");
}

absl::StatusOr<Array> ReadInput(const InputFlags& f) {
  std::optional<DType> dtype;
  if (!f.dtype.empty()) {
    auto parsed = ParseDTypeFlag(f.dtype);
    if (!parsed.ok()) return parsed.status();
    dtype = *parsed;
  }
  auto format = ChooseReadFormat(f.in_format.empty() ? f.format : f.in_format, f.in);
  if (!format.ok()) return format.status();
  return ReadArray(f.in, *format, dtype);
}

absl::Status WriteOutput(const InputFlags& f, const std::string& path, const Array& array) {
  auto format = ChooseWriteFormat(f.out_format.empty() ? f.format : f.out_format, path);
  if (!format.ok()) return format.status();
  return WriteArray(path, *format, array);
}

// WriteOutput's refusals that do not need the answer (bf16 as .npy), before the server is asked.
absl::Status CheckOutput(const InputFlags& f, const std::string& path, DType dtype) {
  auto format = ChooseWriteFormat(f.out_format.empty() ? f.format : f.out_format, path);
  if (!format.ok()) return format.status();
  return CheckWritable(path, *format, dtype);
}

// CLI11's PositiveNumber and NonNegativeNumber say "Value 0 not in range 0.000000 to 1797693134862..."
// (the whole double range); these say what the flag needs.
CLI::Validator AtLeastOne() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !(value > 0)) return "must be a number above 0, not " + text;
        return "";
      },
      "POSITIVE", "positive");
}
CLI::Validator ZeroOrMore() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !(value >= 0)) return "must be 0 or more, not " + text;
        return "";
      },
      "NONNEGATIVE", "non-negative");
}

// Counts written as 1e6 or 2.5e3 (a whole number in scientific notation) become their digits, so that
// every count flag takes the same forms: 1000000, 1M (1024^2), 1e6. Anything else passes through to
// the size parser, which says what is wrong with it.
CLI::Validator ScientificCount() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::size_t e = text.find_first_of("eE");
        if (e == std::string::npos || e == 0 || e + 1 >= text.size()) return "";
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end != text.c_str() + text.size() || !(value >= 0) || value > 9.0e15 || value != std::floor(value)) {
          return "";  // not a whole number in scientific notation: the size parser judges it
        }
        text = std::to_string(static_cast<unsigned long long>(value));
        return "";
      },
      "", "scientific count");
}

Algorithm ParseAlgorithmFlag(const std::string& name) {
  static const std::map<std::string, Algorithm> kNames = {
      {"auto", Algorithm::kAuto},       {"radix", Algorithm::kRadix},
      {"merge", Algorithm::kMerge},     {"bitonic", Algorithm::kBitonic},
      {"odd_even", Algorithm::kOddEven}, {"quicksort", Algorithm::kQuicksort},
      {"cpu", Algorithm::kCpu},         {"radix_select", Algorithm::kRadixSelect},
      {"small_k", Algorithm::kSmallK}, {"thread_lists", Algorithm::kThreadLists}};
  return kNames.at(name);
}
const std::vector<std::string> kAlgorithmNames = {"auto",     "radix",     "merge", "bitonic",      "odd_even",
                                                  "quicksort", "cpu",      "radix_select", "small_k", "thread_lists"};

struct BenchOutput {
  std::string format = "table", path;
  bool progress = false, no_progress = false, fail_on_error = false;
};

// `gpusort bench`: 0 when the run completed (3 with --fail-on-error and failed requests), 2 for flags
// that do not go together, 1 when it could not run or when a measurement had no successful request at
// all (a dead server: nothing was measured, so the report's zeros mean nothing).
int Bench(const BenchConfig& config, const BenchOutput& out) {
  if (absl::Status valid = ValidateBenchConfig(config); !valid.ok()) {
    Fail(valid);
    return 2;
  }
  std::ofstream file;
  if (!out.path.empty()) {  // opened first, so that a bad path fails before the load, not after
    file.open(out.path, std::ios::binary);
    if (!file) return Fail(absl::PermissionDeniedError("cannot write " + out.path));
  }
  ProgressFn progress;
  if (!out.no_progress && (out.progress || isatty(STDERR_FILENO))) {
    progress = [](const BenchProgress& p) {
      std::fprintf(stderr, "\r%-16s %6.1f s %10llu done %10.1f req/s %8llu errors", p.label.c_str(),
                   p.elapsed_s, static_cast<unsigned long long>(p.completed),
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

}  // namespace
}  // namespace gpusort::cli

int main(int argc, char** argv) {
  using namespace gpusort;
  using namespace gpusort::cli;
  CLI::App app{"gpusort: sort and top-k through a gpusort server"};
  app.set_version_flag("--version", std::string("gpusort ") + GPUSORT_VERSION);
  app.require_subcommand(1);
  app.footer(kExitCodes);

  // gen
  auto* gen = app.add_subcommand("gen", "write test data");
  std::string gen_dtype = "u32", gen_distribution = "uniform", gen_out, gen_format;
  std::size_t gen_count = 1000;
  uint64_t gen_seed = 1;
  gen->add_option("--dtype,-t", gen_dtype, kDTypeHelp)->capture_default_str();
  gen->add_option("--count,-n", gen_count, "number of keys (K M G: powers of 1024; or 1e6)")
      ->transform(CLI::AsSizeValue(false))
      ->transform(ScientificCount())  // CLI11 runs the last transform added first
      ->capture_default_str();
  gen->add_option("--distribution,-d", gen_distribution)
      ->check(CLI::IsMember(Distributions()))
      ->capture_default_str();
  gen->add_option("--seed", gen_seed)->capture_default_str();
  gen->add_option("--out,-o", gen_out, "output file")->required();
  gen->add_option("--format", gen_format, "raw, text or npy (default: by extension)");

  // sort
  auto* sort = app.add_subcommand("sort", "sort the keys of a file");
  Connection sort_connection;
  InputFlags sort_files;
  bool descending = false, stable = false, argsort = false;
  std::string sort_algorithm = "auto", indices_out;
  AddConnectionFlags(sort, &sort_connection);
  AddFileFlags(sort, &sort_files);
  sort->add_flag("--descending", descending, "largest first");
  sort->add_flag("--stable", stable, "equal keys keep their input order");
  sort->add_flag("--argsort", argsort, "write the permutation (int64) to --out instead of keys");
  sort->add_option("--indices-out", indices_out, "also write the permutation (int64) here");
  std::string values_in, values_out;
  uint32_t value_width = 0;
  sort->add_option("--values", values_in,
                   "values moved with their keys: a .npy of any dtype (one per key), or raw with --value-width");
  sort->add_option("--value-width", value_width, "bytes per value of a raw --values file (1 to 256)");
  sort->add_option("--values-out", values_out, "where the values go, in their keys' new order (with --values)");
  sort->add_option("--algorithm,-a", sort_algorithm)
      ->check(CLI::IsMember(kAlgorithmNames))
      ->capture_default_str();

  // topk
  auto* topk = app.add_subcommand("topk", "the k largest (or smallest) keys of a file, per row");
  Connection topk_connection;
  InputFlags topk_files;
  uint64_t k = 10, rows = 0;
  bool smallest = false, unsorted = false;
  std::string topk_output = "values", topk_algorithm = "auto", topk_indices_out;
  AddConnectionFlags(topk, &topk_connection);
  AddFileFlags(topk, &topk_files);
  topk->add_option("-k", k, "how many per row")->capture_default_str();
  topk->add_option("--rows", rows, "rows of equal length (default: 2-D .npy rows, else 1)");
  topk->add_flag("--smallest", smallest, "the k smallest instead of the largest");
  topk->add_flag("--unsorted", unsorted, "any order within each row's k");
  topk->add_option("--output", topk_output, "values, indices, or both (indices to --indices-out)")
      ->check(CLI::IsMember({"values", "indices", "both"}))
      ->capture_default_str();
  topk->add_option("--indices-out", topk_indices_out, "where --output both writes the indices");
  topk->add_option("--algorithm,-a", topk_algorithm)
      ->check(CLI::IsMember(kAlgorithmNames))
      ->capture_default_str();

  // health
  auto* health = app.add_subcommand("health", "exit 0 when the server (every one of a list) is SERVING");
  Connection health_connection;
  std::string health_service;
  AddConnectionFlags(health, &health_connection);
  health->add_option("--service", health_service, "service name ('' = the whole server)");

  // bench
  auto* bench = app.add_subcommand("bench", "load-test a server: throughput and latency percentiles");
  BenchConfig bench_config;
  BenchOutput bench_output;
  std::string bench_method = "sort", bench_transport = "unary", bench_algorithm = "auto",
              bench_dtype = "u32";
  int bench_concurrency = 1;
  std::vector<int> bench_sweep;
  const CLI::Validator dtype_name(
      [](std::string& name) {
        return ParseDType(name) ? "" : "unknown dtype '" + name + "' (valid: " + DTypeNameList() + ")";
      },
      "DTYPE");
  bench->add_option("--server,-s", bench_config.server,
                    "server address, or several separated by commas to balance over (or env GPUSORT_SERVER)")
      ->envname("GPUSORT_SERVER")
      ->capture_default_str();
  SecurityFlags bench_security;
  AddSecurityFlags(bench, &bench_security);
  bench->add_option("--timeout", bench_config.timeout_seconds, "deadline of each call in seconds (0: none)");
  bench->add_option("--connections", bench_config.connections, "gRPC connections, used round-robin")
      ->check(AtLeastOne())
      ->capture_default_str();
  bench->add_option("--method", bench_method, "sort, topk (the k largest) or echo (gRPC alone)")
      ->check(CLI::IsMember({"sort", "topk", "echo"}))
      ->capture_default_str();
  bench->add_option("--transport", bench_transport,
                    "unary, stream, shm (shared memory), or device (the keys in GPU memory of this node, "
                    "registered as a device region; needs a gpusort built with CUDA)")
      ->check(CLI::IsMember({"unary", "stream", "shm", "device"}))
      ->capture_default_str();
  AddShmSocketFlag(bench, &bench_config.shm_socket);
  bench->add_option("-k", bench_config.k, "topk: how many (of each row)")->capture_default_str();
  bench->add_option("--rows", bench_config.rows,
                    "each request's keys as this many equal rows: sort sorts each row, topk selects k per "
                    "row (a 2-D --keys-from .npy gives its rows)")
      ->check(AtLeastOne())
      ->capture_default_str();
  bench->add_flag("--descending", bench_config.descending, "sort: largest first");
  bench->add_flag("--argsort", bench_config.argsort, "sort: PAYLOAD_INDICES; topk: indices too");
  bench->add_option("--algorithm,-a", bench_algorithm)
      ->check(CLI::IsMember(kAlgorithmNames))
      ->capture_default_str();
  bench->add_flag("--fresh-answers", bench_config.fresh_answers,
                  "sorts and echoes answer into fresh memory each call (default: each thread reuses its answer "
                  "memory, as tcp_floor does)");
  bench->add_option("--chunk-bytes", bench_config.chunk_bytes, "chunk size of --transport stream")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  bench->add_option("--stream-parts", bench_config.stream_parts,
                    "sort over --transport stream: keys of --stream-parts-from bytes or more go on this many "
                    "streams at once, each on its own connection (1: one stream); echo: the same, only when given")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  bench->add_option("--stream-parts-from", bench_config.stream_parts_from_bytes,
                    "the size of keys from which --stream-parts applies (the client library's default: " +
                        std::to_string(ClientOptions{}.stream_parts_from_bytes >> 20) + " MiB)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  auto* concurrency_flag =
      bench->add_option("--concurrency,-c", bench_concurrency, "closed loop: requests in flight")
          ->check(AtLeastOne())
          ->capture_default_str();
  auto* sweep_flag = bench->add_option("--concurrency-sweep", bench_sweep,
                                       "closed loop at each level, a row each (e.g. 1,4,16,64)")
                         ->delimiter(',')
                         ->check(AtLeastOne())
                         ->excludes(concurrency_flag);
  auto* rate_flag = bench->add_option("--rate", bench_config.rate, "open loop: requests started per second")
                       ->check(AtLeastOne())
                       ->excludes(concurrency_flag)
                       ->excludes(sweep_flag);
  std::string bench_ramp;
  auto* rates_flag = bench->add_option("--rates", bench_config.rates, "open loop at each of these rates, a row each")
                         ->delimiter(',')
                         ->excludes(concurrency_flag)
                         ->excludes(sweep_flag);
  auto* ramp_flag =
      bench->add_option("--ramp", bench_ramp, "open loop stepping FROM:TO:STEP requests/s, a row a step (ghz's step)")
          ->excludes(concurrency_flag)
          ->excludes(sweep_flag)
          ->excludes(rates_flag);
  std::string bench_ramp_linear;
  auto* ramp_linear_flag =
      bench
          ->add_option("--ramp-linear", bench_ramp_linear,
                       "open loop whose rate rises (or falls) in a straight line from FROM to TO requests/s "
                       "over --duration (FROM:TO; ghz's line schedule, continuous), a row per --ramp-interval")
          ->excludes(concurrency_flag)
          ->excludes(sweep_flag)
          ->excludes(rate_flag)
          ->excludes(rates_flag)
          ->excludes(ramp_flag);
  bench->add_option("--ramp-interval", bench_config.ramp_interval_seconds,
                    "--ramp-linear: seconds of the ramp each row covers")
      ->check(AtLeastOne())
      ->needs(ramp_linear_flag)
      ->capture_default_str();
  bench->add_option("--stable", bench_config.stable_percent,
                    "repeat each measurement until p50 and p99 move less than this many percent")
      ->check(AtLeastOne())
      ->excludes(ramp_linear_flag);
  bench->add_option("--stable-max", bench_config.stable_max, "--stable: at most this many measurements a row")
      ->capture_default_str();
  bench->add_option("--max-inflight", bench_config.max_inflight,
                    "open loop: a request due with this many in flight fails (CLIENT_SATURATED)")
      ->check(AtLeastOne())
      ->capture_default_str();
  auto* duration_flag =
      bench->add_option("--duration", bench_config.duration_seconds, "seconds each measurement runs")
          ->check(AtLeastOne())
          ->capture_default_str();
  bench->add_option("--requests", bench_config.requests, "each measurement is this many requests")
      ->check(AtLeastOne())
      ->excludes(duration_flag)
      ->excludes(ramp_linear_flag);
  bench->add_option("--warmup", bench_config.warmup_seconds, "seconds before each measurement, not counted")
      ->check(ZeroOrMore())
      ->capture_default_str();
  bench->add_option("--dtype,-t", bench_dtype, kDTypeHelp)
      ->check(dtype_name)
      ->capture_default_str();
  bench->add_option("--count,-n", bench_config.count, "keys per request (K M G: powers of 1024; or 1e6)")
      ->transform(CLI::AsSizeValue(false))
      ->transform(ScientificCount())  // CLI11 runs the last transform added first
      ->capture_default_str();
  bench->add_option("--distribution,-d", bench_config.distribution)
      ->check(CLI::IsMember(Distributions()))
      ->capture_default_str();
  bench->add_option("--seed", bench_config.seed)->capture_default_str();
  bench->add_option("--payloads", bench_config.payloads, "distinct arrays that requests cycle through")
      ->check(AtLeastOne())
      ->capture_default_str();
  bench->add_flag("--check", bench_config.check, "verify every answer (wrong: WRONG_ANSWER errors)");
  bench->add_option("--format", bench_output.format, "table, json or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
  bench->add_option("--output,-o", bench_output.path, "write the report here instead of stdout");
  auto* progress_flag =
      bench->add_flag("--progress", bench_output.progress, "progress line on stderr, even if no tty");
  bench->add_flag("--no-progress", bench_output.no_progress, "no progress line")->excludes(progress_flag);
  bench->add_flag("--fail-on-error", bench_output.fail_on_error, "exit 3 when any request failed");
  bench->add_option("--keys-from", bench_config.keys_from,
                    "keys from this file (raw, text or .npy; its dtype and count replace --dtype and --count)");

  for (CLI::App* subcommand : app.get_subcommands({})) subcommand->footer(kExitCodes);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are 0; every bad flag or value is 2, whatever CLI11's own code for it.
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  if (*gen) {
    auto dtype = ParseDTypeFlag(gen_dtype);
    if (!dtype.ok()) return Usage(dtype.status());
    auto bytes = Generate(*dtype, gen_count, gen_distribution, gen_seed);
    if (!bytes.ok()) return Fail(bytes.status());
    auto format = ChooseWriteFormat(gen_format, gen_out);
    if (!format.ok()) return Fail(format.status());
    Array array{.dtype = *dtype, .bytes = std::move(*bytes), .shape = {gen_count}};
    absl::Status written = WriteArray(gen_out, *format, array);
    return written.ok() ? 0 : Fail(written);
  }

  if (*sort) {
    if (!sort_files.dtype.empty() && !ParseDTypeFlag(sort_files.dtype).ok()) {
      return Usage(ParseDTypeFlag(sort_files.dtype).status());
    }
    auto input = ReadInput(sort_files);
    if (!input.ok()) return Fail(input.status());
    // A 2-D array (R x C) sorts each of its R rows, like numpy.sort(a, axis=-1); its indices count
    // from each row's start, and the output keeps the shape.
    const bool two_d = input->shape.size() == 2;
    if (absl::Status s = CheckOutput(sort_files, sort_files.out, argsort ? DType::kInt64 : input->dtype); !s.ok())
      return Fail(s);
    auto values = ReadValues(values_in, value_width, values_out, input->count(), argsort || !indices_out.empty());
    if (!values.ok()) return Usage(values.status());
    auto made = MakeClient(sort_connection);
    if (!made.ok()) return Fail(made.status());
    Client& client = **made;
    RawSortRequest request;
    request.dtype = input->dtype;
    request.keys = input->bytes;
    request.options.descending = descending;
    request.options.stable = stable;
    request.options.algorithm = ParseAlgorithmFlag(sort_algorithm);
    request.options.rows = two_d ? input->shape[0] : 1;
    const bool want_indices = argsort || !indices_out.empty();
    if (want_indices) request.payload = Payload::kIndices;
    if (values->has_value()) {
      request.payload = Payload::kValues;
      request.values = (*values)->bytes;
      request.value_width = static_cast<uint32_t>((*values)->bytes.size() / std::max<std::size_t>(1, input->count()));
    }
    auto result = client.SortRaw(request);
    if (!result.ok()) return Fail(result.status());
    if (sort_connection.verbose) PrintInfo(result->info, result->streamed, sort_connection.transport);
    const std::vector<std::size_t> shape = two_d ? input->shape : std::vector<std::size_t>{input->count()};
    Array keys{.dtype = input->dtype, .bytes = std::move(result->keys), .shape = shape};
    Array indices{.dtype = DType::kInt64, .bytes = std::move(result->indices), .shape = shape};
    absl::Status s = WriteOutput(sort_files, sort_files.out, argsort ? indices : keys);
    if (s.ok() && !indices_out.empty()) s = WriteOutput(sort_files, indices_out, indices);
    if (s.ok() && values->has_value()) {
      Array moved = std::move(**values);
      moved.bytes = std::move(result->values);
      auto format = ChooseWriteFormat("", values_out);
      s = format.ok() ? WriteArray(values_out, *format, moved) : format.status();
    }
    return s.ok() ? 0 : Fail(s);
  }

  if (*topk) {
    if (!topk_files.dtype.empty() && !ParseDTypeFlag(topk_files.dtype).ok()) {
      return Usage(ParseDTypeFlag(topk_files.dtype).status());
    }
    auto input = ReadInput(topk_files);
    if (!input.ok()) return Fail(input.status());
    if (rows == 0) rows = input->shape.size() == 2 ? input->shape[0] : 1;
    if (topk_output == "both" && topk_indices_out.empty())
      return Usage(absl::InvalidArgumentError("--output both needs --indices-out"));
    const DType out_dtype = topk_output == "indices" ? DType::kInt64 : input->dtype;
    if (absl::Status s = CheckOutput(topk_files, topk_files.out, out_dtype); !s.ok()) return Fail(s);
    auto made = MakeClient(topk_connection);
    if (!made.ok()) return Fail(made.status());
    Client& client = **made;
    TopKOptions options;
    options.k = k;
    options.largest = !smallest;
    options.sorted = !unsorted;
    options.rows = rows;
    options.algorithm = ParseAlgorithmFlag(topk_algorithm);
    options.output = topk_output == "values"    ? TopKOutput::kValues
                     : topk_output == "indices" ? TopKOutput::kIndices
                                                : TopKOutput::kValuesAndIndices;
    auto result = client.TopKRaw(input->dtype, input->bytes, options);
    if (!result.ok()) return Fail(result.status());
    if (topk_connection.verbose) PrintInfo(result->info, result->streamed, topk_connection.transport);
    std::vector<std::size_t> shape = rows > 1 || input->shape.size() == 2
                                         ? std::vector<std::size_t>{rows, k}
                                         : std::vector<std::size_t>{k};
    Array values{.dtype = input->dtype, .bytes = std::move(result->values), .shape = shape};
    Array indices{.dtype = DType::kInt64, .bytes = std::move(result->indices), .shape = shape};
    absl::Status s = WriteOutput(topk_files, topk_files.out,
                                 topk_output == "indices" ? indices : values);
    if (s.ok() && topk_output == "both") s = WriteOutput(topk_files, topk_indices_out, indices);
    return s.ok() ? 0 : Fail(s);
  }

  if (*bench) {
    static const std::map<std::string, BenchMethod> kMethods = {
        {"sort", BenchMethod::kSort}, {"topk", BenchMethod::kTopK}, {"echo", BenchMethod::kEcho}};
    static const std::map<std::string, BenchTransport> kTransports = {
        {"unary", BenchTransport::kUnary}, {"stream", BenchTransport::kStream},
        {"shm", BenchTransport::kShm}, {"device", BenchTransport::kDevice}};
    bench_config.method = kMethods.at(bench_method);
    bench_config.transport = kTransports.at(bench_transport);
    bench_config.algorithm = ParseAlgorithmFlag(bench_algorithm);
    bench_config.dtype = *ParseDType(bench_dtype);
    if (!bench_ramp.empty()) {
      auto steps = RampRates(bench_ramp);
      if (!steps.ok()) return Usage(steps.status());
      bench_config.rates = *std::move(steps);
    }
    if (!bench_ramp_linear.empty()) {
      auto ramp = ParseLinearRamp(bench_ramp_linear, bench_config.duration_seconds);
      if (!ramp.ok()) return Usage(ramp.status());
      bench_config.linear_ramp_from = ramp->from;
      bench_config.linear_ramp_to = ramp->to;
    }
    bench_config.dtype_given = bench->count("--dtype") > 0;
    bench_config.concurrency = bench_sweep.empty() ? std::vector<int>{bench_concurrency} : bench_sweep;
    ClientOptions connection;
    if (absl::Status applied = ApplyConnectionFlags(bench_config.server, bench_security, &connection);
        !applied.ok()) {
      Fail(applied);
      return 2;
    }
    bench_config.load_balancing = connection.load_balancing;
    bench_config.tls = connection.tls;
    bench_config.bearer_token = connection.bearer_token;
    // An echo goes on one stream unless asked (earlier echo rows stay comparable).
    if (bench->count("--stream-parts") > 0) bench_config.echo_stream_parts = bench_config.stream_parts;
    return Bench(bench_config, bench_output);
  }

  if (*health) return Health(health_connection, health_service);
  return 0;
}
