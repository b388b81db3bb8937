// `gpusort bench`: its percentiles, its JSON and CSV reports, and whole runs against an in-process
// server (sort, topk and echo, unary and streamed, closed and open loop), including failed requests
// counted by code rather than ending the run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "client/cli/bench_report.h"
#include "client/cli/bench_runner.h"
#include "client/cli/bench_stats.h"
#include "client/cli/dtype_names.h"
#include "client/cli/rate_ramp.h"
#include "tests/service/scripted_backend.h"
#include "tests/service/test_server.h"

namespace gpusort::cli {
namespace {

using ::testing::HasSubstr;

TEST(BenchStats, NearestRankPercentilesOfOneToAThousand) {
  std::vector<double> ms(1000);
  for (int i = 0; i < 1000; ++i) ms[i] = i + 1;
  std::shuffle(ms.begin(), ms.end(), std::mt19937(7));
  const LatencySummary s = Summarize(ms);
  EXPECT_DOUBLE_EQ(s.mean, 500.5);
  EXPECT_EQ(s.p50, 500);
  EXPECT_EQ(s.p90, 900);
  EXPECT_EQ(s.p95, 950);
  EXPECT_EQ(s.p99, 990);
  EXPECT_EQ(s.p99_9, 999);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 1000);
  EXPECT_EQ(Summarize({}), LatencySummary{});
  EXPECT_EQ(Percentile({42}, 99.9), 42);
}

TEST(BenchStats, RecordersMerge) {
  Recorder a, b;
  a.Ok(1.0, 10, 20);
  a.Error("UNAVAILABLE", "first");
  b.Ok(2.0, 10, 20);
  b.Error("UNAVAILABLE", "second");
  b.Error(kWrongAnswer, "key 3");
  a.Merge(std::move(b));
  EXPECT_EQ(a.ok(), 2u);
  EXPECT_EQ(a.errors(), 3u);
  EXPECT_EQ(a.request_bytes() + a.response_bytes(), 60u);
  EXPECT_THAT(a.latencies_ms(), ::testing::UnorderedElementsAre(1.0, 2.0));
  EXPECT_EQ(a.errors_by_code().at("UNAVAILABLE"), 2u);
  EXPECT_EQ(a.first_messages().at("UNAVAILABLE"), "first");
}

std::vector<BenchRow> SampleRows() {
  BenchRow closed{.method = "sort", .transport = "unary", .dtype = "u32", .count = 1000,
                  .concurrency = 8, .rate = 0, .connections = 2, .duration_s = 3.0125,
                  .requests = 12000, .errors = 4,
                  .errors_by_code = {{"UNAVAILABLE", 3}, {"WRONG_ANSWER", 1}},
                  .error_messages = {{"UNAVAILABLE", "connection refused"}, {"WRONG_ANSWER", "key 3"}},
                  .requests_per_s = 3983.4, .keys_per_s = 3983400.25, .mb_per_s = 31.87,
                  .latency_ms = {.mean = 2.01, .p50 = 1.9, .p90 = 2.5, .p95 = 2.8, .p99 = 3.7,
                                 .p99_9 = 9.25, .max = 12.5, .min = 0.75}};
  closed.latency_histogram = {{1, 10}, {2, 11900}, {5, 80}, {INFINITY, 10}};
  closed.stage_p50_ms = {{"validate", 0.004}, {"queue", 0.02}, {"sort", 1.5}};
  closed.algorithm = "radix";
  closed.distribution = "uniform";
  closed.seed = 7;
  closed.payloads = 4;
  closed.rows = 8;
  closed.check = true;
  BenchRow open = closed;
  open.method = "echo";
  open.transport = "stream";
  open.concurrency = 0;
  open.rate = 500;
  open.errors = 0;
  open.errors_by_code.clear();
  open.error_messages.clear();
  return {closed, open};
}

TEST(BenchReport, JsonHasTheFieldsAndParsesBack) {
  const auto rows = SampleRows();
  const std::string text = ToJson({.server = "localhost:50051", .started_at = "2025-01-02T03:04:05Z"}, rows);
  const auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["tool"], "gpusort bench");
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["server"], "localhost:50051");
  EXPECT_EQ(doc["started_at"], "2025-01-02T03:04:05Z");
  EXPECT_THAT(doc["mb_per_s_note"].get<std::string>(), HasSubstr("1e6"));
  ASSERT_EQ(doc["rows"].size(), 2u);
  const auto& row = doc["rows"][0];
  EXPECT_EQ(row["method"], "sort");
  EXPECT_EQ(row["transport"], "unary");
  EXPECT_EQ(row["dtype"], "u32");
  EXPECT_EQ(row["count"], 1000);
  EXPECT_EQ(row["concurrency"], 8);
  EXPECT_TRUE(row["rate"].is_null());
  EXPECT_EQ(row["connections"], 2);
  EXPECT_EQ(row["duration_s"], 3.0125);
  EXPECT_EQ(row["requests"], 12000);
  EXPECT_EQ(row["errors"], 4);
  EXPECT_EQ(row["errors_by_code"]["UNAVAILABLE"], 3);
  EXPECT_EQ(row["errors_by_code"]["WRONG_ANSWER"], 1);
  EXPECT_EQ(row["requests_per_s"], 3983.4);
  EXPECT_EQ(row["keys_per_s"], 3983400.25);
  EXPECT_EQ(row["mb_per_s"], 31.87);
  EXPECT_EQ(row["latency_ms"]["p50"], 1.9);
  EXPECT_EQ(row["latency_ms"]["p99_9"], 9.25);
  EXPECT_EQ(row["latency_ms"]["min"], 0.75);
  EXPECT_TRUE(doc["rows"][1]["concurrency"].is_null());
  EXPECT_EQ(doc["rows"][1]["rate"], 500);

  // Every parameter, the server's stage medians and the latency histogram (issue 17).
  EXPECT_EQ(row["params"]["algorithm"], "radix");
  EXPECT_EQ(row["params"]["seed"], 7);
  EXPECT_EQ(row["params"]["distribution"], "uniform");
  EXPECT_EQ(row["params"]["check"], true);
  EXPECT_EQ(row["params"]["rows"], 8);
  EXPECT_EQ(row["server_stage_p50_ms"]["sort"], 1.5);
  EXPECT_EQ(row["latency_histogram_ms"][1]["le"], 2);
  EXPECT_EQ(row["latency_histogram_ms"][1]["count"], 11900);
  EXPECT_EQ(row["latency_histogram_ms"][3]["le"], "inf");

  auto parsed = ParseJson(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, rows);
  EXPECT_FALSE(ParseJson("{\"rows\": [{}]}").ok());
  EXPECT_FALSE(ParseJson("not json").ok());
}

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
  return parts;
}

TEST(BenchReport, CsvIsAHeaderAndOneLinePerRow) {
  const auto lines = Split(ToCsv(SampleRows()), '\n');
  ASSERT_EQ(lines.size(), 3u);
  const auto header = Split(lines[0], ',');
  EXPECT_EQ(header.front(), "method");
  EXPECT_EQ(header.back(), "check");
  // One column per stage, in sort.proto's order, the same in every row (empty where a row's calls never
  // met the stage).
  const auto sort_column = std::find(header.begin(), header.end(), "stage_sort_p50_ms") - header.begin();
  const auto queue_column = std::find(header.begin(), header.end(), "stage_queue_p50_ms") - header.begin();
  const auto kernel_column = std::find(header.begin(), header.end(), "stage_kernel_p50_ms") - header.begin();
  ASSERT_LT(static_cast<std::size_t>(sort_column), header.size());
  EXPECT_LT(queue_column, sort_column);
  EXPECT_LT(kernel_column, sort_column);
  EXPECT_EQ(Split(lines[1], ',')[sort_column], "1.500");
  EXPECT_EQ(Split(lines[1], ',')[queue_column], "0.020");
  EXPECT_EQ(Split(lines[1], ',')[kernel_column], "");
  EXPECT_NE(std::find(header.begin(), header.end(), "seed"), header.end());
  EXPECT_NE(std::find(header.begin(), header.end(), "rows"), header.end());
  const auto code_column = std::find(header.begin(), header.end(), "errors_by_code") - header.begin();
  for (std::size_t i = 1; i < lines.size(); ++i) {
    // getline drops an empty last field; no row ends in one.
    EXPECT_EQ(Split(lines[i], ',').size(), header.size()) << lines[i];
  }
  EXPECT_EQ(Split(lines[1], ',')[code_column], "UNAVAILABLE:3;WRONG_ANSWER:1");
  EXPECT_EQ(Split(lines[2], ',')[code_column], "");
}

TEST(BenchReport, TableHasAHeaderAndALinePerRow) {
  const std::string table = ToTable(SampleRows());
  const auto lines = Split(table, '\n');
  ASSERT_GE(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr("p99.9"));
  EXPECT_THAT(lines[1], HasSubstr("UNAVAILABLE:3;WRONG_ANSWER:1"));
  EXPECT_THAT(lines[2], HasSubstr("500/s"));
  EXPECT_THAT(table, HasSubstr("UNAVAILABLE: connection refused"));
}

// A measurement with no successful request shows no latency ("-"), not zeros that read as a fast server.
TEST(BenchReport, ARowWithNoSuccessShowsNoLatency) {
  std::vector<BenchRow> rows = SampleRows();
  rows[0].requests = 0;
  const auto lines = Split(ToTable(rows), '\n');
  ASSERT_GE(lines.size(), 3u);
  auto words = [](const std::string& line) {
    std::vector<std::string> out;
    std::istringstream in(line);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  };
  const std::vector<std::string> header = words(lines[0]), none = words(lines[1]), some = words(lines[2]);
  const auto mean = std::find(header.begin(), header.end(), "mean") - header.begin();
  ASSERT_GE(none.size(), static_cast<std::size_t>(mean + 7));
  ASSERT_GE(some.size(), static_cast<std::size_t>(mean + 7));
  for (auto c = mean; c < mean + 7; ++c) {
    EXPECT_EQ(none[c], "-") << header[c];
    EXPECT_NE(some[c], "-") << header[c];
  }
}

// Runs against one in-process CPU server, kept for the suite: each test stays well under 10 s.
TEST(BenchStats, HistogramBucketsEveryLatencyOnce) {
  const std::vector<double> ms = {0.003, 0.015, 0.015, 0.3, 0.7, 1.0, 1.0000001, 4000.0};
  const std::vector<LatencyBucket> h = Histogram(ms);
  uint64_t total = 0;
  for (const LatencyBucket& b : h) total += b.count;
  EXPECT_EQ(total, ms.size());
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h.front(), (LatencyBucket{0.01, 1}));  // 0.003 ms: the first bucket, <= 0.01
  EXPECT_EQ(h[1], (LatencyBucket{0.02, 2}));
  EXPECT_EQ(h.back(), (LatencyBucket{5000, 1}));
  auto bucket_of = [&](double le) {
    for (const LatencyBucket& b : h)
      if (b.le_ms == le) return b.count;
    return uint64_t{999};
  };
  EXPECT_EQ(bucket_of(1), 2u);  // 0.7 and 1.0: (0.5, 1]
  EXPECT_EQ(bucket_of(2), 1u);  // 1.0000001
  EXPECT_TRUE(Histogram({}).empty());
}

TEST(BenchStats, StageMediansSurviveMerging) {
  Recorder a, b;
  a.Ok(1, 10, 10, {{"queue", 0.1}, {"sort", 3}});
  a.Ok(1, 10, 10, {{"queue", 0.2}, {"sort", 1}});
  b.Ok(1, 10, 10, {{"validate", 0.01}, {"queue", 0.3}, {"sort", 2}});
  a.Merge(std::move(b));
  const StageTimes medians = StageMedians(a.stages_ms());
  ASSERT_EQ(medians.size(), 3u);
  EXPECT_EQ(medians[0], (std::pair<std::string, double>{"queue", 0.2}));
  EXPECT_EQ(medians[1], (std::pair<std::string, double>{"sort", 2}));
  EXPECT_EQ(medians[2], (std::pair<std::string, double>{"validate", 0.01}));
}

TEST(BenchRamp, StepsFromOneRateToAnother) {
  EXPECT_EQ(*RampRates("40:120:40"), (std::vector<double>{40, 80, 120}));
  EXPECT_EQ(*RampRates("100:10:45"), (std::vector<double>{100, 55, 10}));  // downwards
  EXPECT_EQ(*RampRates("10:30:15"), (std::vector<double>{10, 25}));       // TO not on a step: not passed
  EXPECT_EQ(RampRates("0.1:0.3:0.1")->size(), 3u);                       // 0.30000000000000004 stays in
  for (const char* bad : {"", "40", "40:120", "40:120:0", "-1:5:1", "1:5:1:2", "a:b:c", "1:5:1x"}) {
    EXPECT_FALSE(RampRates(bad).ok()) << bad;
  }
  EXPECT_FALSE(RampRates("1:100000:1").ok());  // more than 1000 steps
}

// --ramp-linear: request i is due when the integral of the rate reaches i, up or down the ramp, and the
// gap between two requests is the inverse of the rate halfway between them (a linear rate's integral
// over the gap is the gap times its value at the midpoint: exactly one request).
TEST(BenchRamp, LinearRampArrivalsFollowTheIntegralOfTheRate) {
  for (const LinearRamp ramp :
       {LinearRamp{.from = 10, .to = 30, .seconds = 2}, LinearRamp{.from = 30, .to = 10, .seconds = 2},
        LinearRamp{.from = 1, .to = 1000, .seconds = 3}, LinearRamp{.from = 50, .to = 50, .seconds = 1}}) {
    SCOPED_TRACE(std::to_string(ramp.from) + " to " + std::to_string(ramp.to));
    const double total = (ramp.from + ramp.to) / 2 * ramp.seconds;  // requests over the whole ramp
    EXPECT_DOUBLE_EQ(ramp.ArrivalsBy(ramp.seconds), total);
    EXPECT_EQ(ramp.DueAt(0), 0);
    // Requests 0 .. ceil(total) - 1 start within the ramp; the next one at its end or after.
    const auto in_ramp = static_cast<uint64_t>(std::ceil(total));
    EXPECT_LT(ramp.DueAt(in_ramp - 1), ramp.seconds);
    EXPECT_GE(ramp.DueAt(in_ramp), ramp.seconds * (1 - 1e-12));
    uint64_t due_in_ramp = 0;
    for (uint64_t i = 0; i < static_cast<uint64_t>(total) + 2; ++i) {
      const double t = ramp.DueAt(i), next = ramp.DueAt(i + 1);
      ASSERT_NEAR(ramp.ArrivalsBy(t), static_cast<double>(i), 1e-9 * static_cast<double>(i + 1)) << i;
      ASSERT_GT(next, t) << i;
      ASSERT_NEAR((next - t) * ramp.RateAt((t + next) / 2), 1.0, 1e-9) << i;
      due_in_ramp += t < ramp.seconds;
    }
    EXPECT_EQ(due_in_ramp, in_ramp);
  }
  const LinearRamp flat{.from = 50, .to = 50, .seconds = 1};
  for (uint64_t i : {1, 7, 49}) EXPECT_DOUBLE_EQ(flat.DueAt(i), static_cast<double>(i) / 50);
  // Rising, the gaps shrink: the first second of 10 -> 30 over 2 s (10 to 20/s) holds 15 requests, the
  // second (20 to 30/s) 25.
  const LinearRamp rising{.from = 10, .to = 30, .seconds = 2};
  EXPECT_DOUBLE_EQ(rising.ArrivalsBy(1), 15);
  EXPECT_LT(rising.DueAt(39) - rising.DueAt(38), rising.DueAt(1) - rising.DueAt(0));
}

TEST(BenchRamp, LinearRampTakesTwoPositiveRates) {
  auto ramp = ParseLinearRamp("12.5:400", 30);
  ASSERT_TRUE(ramp.ok()) << ramp.status();
  EXPECT_EQ(ramp->from, 12.5);
  EXPECT_EQ(ramp->to, 400);
  EXPECT_EQ(ramp->seconds, 30);
  EXPECT_TRUE(ParseLinearRamp("400:20", 1).ok());  // downwards
  for (const char* bad : {"", "40", "40:", ":40", "0:40", "40:0", "-1:5", "40:120:40", "a:b", "10:20x", "inf:5",
                          "5:nan"}) {
    auto refused = ParseLinearRamp(bad, 10);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_THAT(refused.status().message(), HasSubstr("--ramp-linear takes FROM:TO")) << bad;
  }
  EXPECT_THAT(ParseLinearRamp("10:20", 0).status().message(), HasSubstr("positive --duration"));

  // What the flags alone cannot say: the ramp sets the rate and the length itself.
  BenchConfig c;
  c.linear_ramp_from = 10;
  c.linear_ramp_to = 20;
  EXPECT_TRUE(ValidateBenchConfig(c).ok());
  for (auto [change, message] : std::vector<std::pair<std::function<void(BenchConfig&)>, std::string>>{
           {[](BenchConfig& b) { b.requests = 8; }, "not for a number of --requests"},
           {[](BenchConfig& b) { b.rate = 5; }, "sets the rate itself"},
           {[](BenchConfig& b) { b.rates = {5, 6}; }, "sets the rate itself"},
           {[](BenchConfig& b) { b.stable_percent = 5; }, "--stable"},
           {[](BenchConfig& b) { b.ramp_interval_seconds = 0; }, "--ramp-interval"},
           {[](BenchConfig& b) { b.ramp_interval_seconds = 1e-4; }, "more than 10000 rows"},
           {[](BenchConfig& b) { b.linear_ramp_to = -3; }, "above 0"}}) {
    BenchConfig bad = c;
    change(bad);
    EXPECT_THAT(ValidateBenchConfig(bad).message(), HasSubstr(message));
  }
}

class BenchEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new testing::TestServer(testing::ShmConfig()); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  static BenchConfig Config(BenchMethod method, BenchTransport transport) {
    BenchConfig c;
    c.server = server_->address();
    c.method = method;
    c.transport = transport;
    c.shm_socket = server_->shm_socket();
    c.connections = 2;
    c.concurrency = {4};
    c.requests = 50;
    c.warmup_seconds = 0;
    c.count = 1000;
    c.chunk_bytes = 1500;  // several chunks a request on the streaming transports
    c.check = true;
    c.timeout_seconds = 20;
    return c;
  }

  static void ExpectClean(const absl::StatusOr<std::vector<BenchRow>>& rows, uint64_t requests = 50) {
    ASSERT_TRUE(rows.ok()) << rows.status();
    ASSERT_EQ(rows->size(), 1u);
    const BenchRow& row = rows->front();
    EXPECT_EQ(row.errors, 0u) << ::testing::PrintToString(row.error_messages);
    EXPECT_EQ(row.requests, requests);
    EXPECT_GT(row.latency_ms.min, 0);
    EXPECT_LE(row.latency_ms.min, row.latency_ms.p50);
    EXPECT_LE(row.latency_ms.p50, row.latency_ms.p99);
    EXPECT_LE(row.latency_ms.p99, row.latency_ms.max);
    EXPECT_GT(row.requests_per_s, 0);
    EXPECT_GT(row.mb_per_s, 0);
    EXPECT_GT(row.duration_s, 0);
  }

  static testing::TestServer* server_;
};
testing::TestServer* BenchEndToEnd::server_ = nullptr;

// Each row says the server's stage medians and every parameter; --keys-from takes the keys (and for
// .npy the dtype and count) from a file.
TEST_F(BenchEndToEnd, RowsCarryStagesParametersAndKeysFromAFile) {
  BenchConfig c = Config(BenchMethod::kTopK, BenchTransport::kUnary);
  c.k = 7;
  c.seed = 42;
  auto rows = RunBench(c);
  ExpectClean(rows);
  const BenchRow& row = rows->front();
  EXPECT_EQ(row.k, 7u);
  EXPECT_EQ(row.seed, 42u);
  EXPECT_EQ(row.algorithm, "auto");
  EXPECT_EQ(row.distribution, "uniform");
  EXPECT_TRUE(row.check);
  ASSERT_FALSE(row.stage_p50_ms.empty());
  double validate = -1, server = -1;
  for (const auto& [stage, ms] : row.stage_p50_ms) {
    EXPECT_GE(ms, 0) << stage;
    if (stage == "validate") validate = ms;
    if (stage == "server") server = ms;
  }
  EXPECT_GE(validate, 0) << ::testing::PrintToString(row.stage_p50_ms);
  // The server's whole time (arrival to reply) holds each of its stages.
  EXPECT_GE(server, validate) << ::testing::PrintToString(row.stage_p50_ms);
  uint64_t counted = 0;
  for (const LatencyBucket& b : row.latency_histogram) counted += b.count;
  EXPECT_EQ(counted, row.requests);

  // An .npy of 300 int16 keys: dtype and count come from the file.
  const std::string path = ::testing::TempDir() + "/bench_keys.npy";
  std::string npy = std::string("\x93NUMPY\x01\x00", 8);
  std::string header = "{'descr': '<i2', 'fortran_order': False, 'shape': (300,), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  npy += static_cast<char>(header.size() & 0xFF);
  npy += static_cast<char>(header.size() >> 8);
  npy += header;
  for (int i = 0; i < 300; ++i) {
    const int16_t v = static_cast<int16_t>((i * 7919) % 601 - 300);
    npy.append(reinterpret_cast<const char*>(&v), 2);
  }
  {
    std::ofstream out(path, std::ios::binary);
    out << npy;
  }
  BenchConfig from_file = Config(BenchMethod::kSort, BenchTransport::kUnary);
  from_file.keys_from = path;
  auto file_rows = RunBench(from_file);
  ExpectClean(file_rows);
  EXPECT_EQ(file_rows->front().dtype, "i16");
  EXPECT_EQ(file_rows->front().count, 300u);
  EXPECT_EQ(file_rows->front().distribution, "file");
  EXPECT_EQ(file_rows->front().keys_from, path);
  BenchConfig missing = from_file;
  missing.keys_from = path + ".missing";
  EXPECT_FALSE(RunBench(missing).ok());
}

// --rows: each request's keys are equal rows, each sorted alone (indices per row) or giving k per row,
// over gRPC and shared memory, every answer checked row by row; rows that do not divide the keys, or
// a k longer than a row, fail up front.
TEST_F(BenchEndToEnd, RowsAreSortedAndSelectedRowByRow) {
  for (BenchTransport transport : {BenchTransport::kUnary, BenchTransport::kShm}) {
    BenchConfig sort = Config(BenchMethod::kSort, transport);
    sort.rows = 10;
    sort.argsort = true;
    sort.descending = true;
    sort.distribution = "few-distinct";  // ties inside rows
    auto sorted = RunBench(sort);
    ExpectClean(sorted);
    EXPECT_EQ(sorted->front().rows, 10u);

    BenchConfig topk = Config(BenchMethod::kTopK, transport);
    topk.rows = 8;
    topk.k = 5;
    topk.argsort = true;
    ExpectClean(RunBench(topk));
  }
  BenchConfig uneven = Config(BenchMethod::kSort, BenchTransport::kUnary);
  uneven.rows = 7;  // 1000 keys
  EXPECT_THAT(RunBench(uneven).status().message(), HasSubstr("--rows must divide --count"));
  BenchConfig long_k = Config(BenchMethod::kTopK, BenchTransport::kUnary);
  long_k.rows = 100;
  long_k.k = 11;  // rows of 10
  EXPECT_THAT(RunBench(long_k).status().message(), HasSubstr("a row's length"));
}

// A checker that judged the whole array would pass a sort of the whole array; row by row it must not.
TEST(BenchErrors, AnAnswerSortedAcrossRowsIsWrongForRows) {
  auto counters = std::make_shared<testing::ScriptedBackend::Counters>();
  counters->release = true;
  testing::TestServer server(testing::LoopbackConfig(), std::make_unique<testing::ScriptedBackend>(counters));
  BenchConfig c;
  c.server = server.address();
  c.rows = 4;
  c.check = true;
  c.requests = 5;
  c.warmup_seconds = 0;
  auto rows = RunBench(c);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->front().errors_by_code, (std::map<std::string, uint64_t>{{"WRONG_ANSWER", 5}}));
}

// --rates (and --ramp, which expands into them): a row per rate, each in open loop at that rate.
// --stable repeats a measurement until p50 and p99 settle, at most stable_max times.
TEST_F(BenchEndToEnd, RateSweepsGiveARowPerRateAndStableRepeatsUntilSettled) {
  BenchConfig c = Config(BenchMethod::kSort, BenchTransport::kUnary);
  c.concurrency = {};
  c.rates = {40, 80};
  c.requests = 20;
  auto rows = RunBench(c);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].rate, 40);
  EXPECT_EQ((*rows)[1].rate, 80);
  EXPECT_EQ((*rows)[0].concurrency, 0);
  for (const BenchRow& row : *rows) EXPECT_EQ(row.requests, 20u);

  BenchConfig loose = Config(BenchMethod::kSort, BenchTransport::kUnary);
  loose.requests = 10;
  loose.stable_percent = 1e9;  // any two measurements agree
  rows = RunBench(loose);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->front().repetitions, 2);
  EXPECT_TRUE(rows->front().stable);
  BenchConfig strict = loose;
  strict.stable_percent = 1e-9;  // no two measurements agree that closely
  strict.stable_max = 3;
  rows = RunBench(strict);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->front().repetitions, 3);
  EXPECT_FALSE(rows->front().stable);
  EXPECT_EQ(rows->front().stable_percent, 1e-9);
  BenchConfig bad = c;
  bad.rates = {10, 0};
  EXPECT_FALSE(RunBench(bad).ok());
}

TEST_F(BenchEndToEnd, SortUnaryStreamAndSharedMemoryAnswerRight) {
  for (BenchTransport t : {BenchTransport::kUnary, BenchTransport::kStream, BenchTransport::kShm}) {
    SCOPED_TRACE(TransportName(t));
    ExpectClean(RunBench(Config(BenchMethod::kSort, t)));
  }
}

TEST_F(BenchEndToEnd, ArgsortDescendingAndTopKOfEveryFloatBitPattern) {
  BenchConfig argsort = Config(BenchMethod::kSort, BenchTransport::kUnary);
  argsort.dtype = DType::kFloat32;
  argsort.distribution = "bits";  // NaNs, infinities, -0.0: the checker's totalOrder
  argsort.descending = true;
  argsort.argsort = true;
  ExpectClean(RunBench(argsort));

  BenchConfig topk = Config(BenchMethod::kTopK, BenchTransport::kStream);
  topk.dtype = DType::kFloat64;
  topk.distribution = "bits";
  topk.k = 25;
  topk.argsort = true;
  ExpectClean(RunBench(topk));
}

TEST_F(BenchEndToEnd, EveryNarrowDTypeInTheProtosOrder) {
  // Every bit pattern (float16 and bfloat16 NaNs, infinities, -0.0): the checker's totalOrder on 16 and
  // 8 bits, sorted both ways with argsort and as top-k, whole and in several streamed chunks.
  for (DType dtype : {DType::kFloat16, DType::kBFloat16, DType::kInt16, DType::kUint16,
                          DType::kInt8, DType::kUint8}) {
    for (BenchTransport t : {BenchTransport::kUnary, BenchTransport::kStream}) {
      SCOPED_TRACE(DTypeName(dtype) + " " + TransportName(t));
      BenchConfig sort = Config(BenchMethod::kSort, t);
      sort.dtype = dtype;
      sort.distribution = "bits";
      sort.descending = dtype == DType::kFloat16 || dtype == DType::kInt8;
      sort.argsort = true;
      sort.requests = 10;
      ExpectClean(RunBench(sort), 10);
      BenchConfig topk = sort;
      topk.method = BenchMethod::kTopK;
      topk.k = 25;
      ExpectClean(RunBench(topk), 10);
    }
  }
}

TEST_F(BenchEndToEnd, ArgsortAndTopKOverSharedMemoryAnswerRight) {
  BenchConfig argsort = Config(BenchMethod::kSort, BenchTransport::kShm);
  argsort.argsort = true;
  argsort.descending = true;
  argsort.dtype = DType::kInt64;
  ExpectClean(RunBench(argsort));
  BenchConfig topk = Config(BenchMethod::kTopK, BenchTransport::kShm);
  topk.argsort = true;
  topk.k = 33;
  ExpectClean(RunBench(topk));
}

// Every (connection, payload) pair that requests will use has its region before the measurement, not
// on first use inside it: 2 connections and 3 payloads pair up six ways (gcd 1), so six regions are
// registered when the measurement ends, though its two requests used only two pairs.
TEST_F(BenchEndToEnd, EveryPayloadsRegionIsRegisteredBeforeTheMeasurement) {
  for (int i = 0; i < 200 && server_->server().registered_regions() != 0; ++i) {  // earlier tests' regions
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(server_->server().registered_regions(), 0u);
  BenchConfig c = Config(BenchMethod::kSort, BenchTransport::kShm);
  c.connections = 2;
  c.payloads = 3;
  c.concurrency = {1};
  c.requests = 2;
  std::size_t at_the_end = 0;
  auto rows = RunBench(c, [&](const BenchProgress& p) {
    if (p.final) at_the_end = server_->server().registered_regions();
  });
  ExpectClean(rows, 2);
  EXPECT_EQ(at_the_end, 6u);
}

// --transport device: on a GPU server (GPUSORT_TEST_BACKEND=cuda, on the GPU machine) every answer is
// right; elsewhere the run fails up front saying why (no CUDA in this build, no GPU here, or a server
// without device regions), rather than counting one error per request.
TEST_F(BenchEndToEnd, DeviceMemoryAnswersRightOnAGpuServerAndSaysWhyElsewhere) {
  BenchConfig argsort = Config(BenchMethod::kSort, BenchTransport::kDevice);
  argsort.argsort = true;
  argsort.dtype = DType::kFloat32;
  argsort.distribution = "bits";
  BenchConfig topk = Config(BenchMethod::kTopK, BenchTransport::kDevice);
  topk.argsort = true;
  topk.k = 33;
  for (const BenchConfig& config : {argsort, topk}) {
    auto rows = RunBench(config);
    if (testing::TestingCuda()) {
      ExpectClean(rows);
      continue;
    }
    ASSERT_FALSE(rows.ok()) << "a device run on a CPU server should fail up front";
    EXPECT_THAT(rows.status().code(),
                ::testing::AnyOf(absl::StatusCode::kUnimplemented, absl::StatusCode::kFailedPrecondition))
        << rows.status();
    EXPECT_THAT(std::string(rows.status().message()),
                ::testing::AnyOf(HasSubstr("built with CUDA"), HasSubstr("no usable GPU"),
                                 HasSubstr("device regions need a GPU server")))
        << rows.status();
  }
}

TEST_F(BenchEndToEnd, EchoUnaryAndStreamReturnTheBytes) {
  for (BenchTransport t : {BenchTransport::kUnary, BenchTransport::kStream}) {
    SCOPED_TRACE(TransportName(t));
    auto rows = RunBench(Config(BenchMethod::kEcho, t));
    ExpectClean(rows);
    ASSERT_TRUE(rows.ok());
    // 4000 key bytes out and back, per request.
    EXPECT_NEAR(rows->front().mb_per_s * 1e6 * rows->front().duration_s, 50 * 8000.0, 1e-3);
  }
}

// --stream-parts with echo: 16 MiB (where a sort goes in parts) echoed as 4 streams at once, each on its
// own connection; the checker sees the parts joined back in order.
TEST_F(BenchEndToEnd, EchoInPartsReturnsTheBytesInOrder) {
  BenchConfig c = Config(BenchMethod::kEcho, BenchTransport::kStream);
  c.count = ClientOptions{}.stream_parts_from_bytes / 4;  // u32 keys: exactly the bytes parts start at
  c.echo_stream_parts = 4;
  c.chunk_bytes = std::size_t{1} << 20;
  c.concurrency = {1};
  c.requests = 2;
  auto rows = RunBench(c);
  ExpectClean(rows, 2);  // a part out of place would be a WRONG_ANSWER error
}

// Each bench thread reuses its answer memory (SortRawInto) unless --fresh-answers: with two payloads
// taking turns, a reused buffer holds the other payload's answer when the next call starts, and every
// answer must still be checked right; sorts in parts, argsort, and echoes in parts, both ways. Parts from
// 64 KiB (--stream-parts-from), not the client's 16 MiB: 4M keys with argsort took 15 minutes under
// ThreadSanitizer on two cores, where CI's tests have 5.
TEST_F(BenchEndToEnd, AnswersInReusedAndInFreshMemoryAreBothRight) {
  constexpr std::size_t kPartsFromBytes = std::size_t{64} << 10;
  for (bool fresh : {false, true}) {
    SCOPED_TRACE(fresh ? "fresh answers" : "reused answers");
    for (std::size_t count : {std::size_t{4099}, kPartsFromBytes / 4 + 1}) {
      BenchConfig sort = Config(BenchMethod::kSort, BenchTransport::kStream);
      sort.count = count;  // one stream; in 3 parts
      sort.chunk_bytes = std::size_t{16} << 10;
      sort.stream_parts = 3;
      sort.stream_parts_from_bytes = kPartsFromBytes;
      sort.argsort = true;
      sort.payloads = 2;
      sort.concurrency = {2};
      sort.requests = 4;
      sort.fresh_answers = fresh;
      ExpectClean(RunBench(sort), 4);
    }
    BenchConfig echo = Config(BenchMethod::kEcho, BenchTransport::kStream);
    echo.count = kPartsFromBytes / 4;
    echo.echo_stream_parts = 3;
    echo.stream_parts_from_bytes = kPartsFromBytes;
    echo.chunk_bytes = std::size_t{16} << 10;
    echo.payloads = 2;
    echo.concurrency = {1};
    echo.requests = 3;
    echo.fresh_answers = fresh;
    ExpectClean(RunBench(echo), 3);
  }
}

TEST_F(BenchEndToEnd, SweepGivesARowPerLevelAndProgressIsReported) {
  BenchConfig c = Config(BenchMethod::kSort, BenchTransport::kUnary);
  c.concurrency = {1, 2, 8};
  c.requests = 0;
  c.duration_seconds = 0.6;
  c.warmup_seconds = 0.1;
  std::vector<BenchProgress> seen;
  std::mutex mu;
  auto rows = RunBench(c, [&](const BenchProgress& p) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(p);
  });
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*rows)[i].concurrency, c.concurrency[i]);
    EXPECT_EQ((*rows)[i].errors, 0u);
    EXPECT_GT((*rows)[i].requests, 0u);
    EXPECT_GE((*rows)[i].duration_s, 0.6);
  }
  // A warm-up and a measurement per level, each ending with a final report; ticks in between.
  const auto finals = std::count_if(seen.begin(), seen.end(), [](const auto& p) { return p.final; });
  EXPECT_EQ(finals, 6);
  EXPECT_GT(seen.size(), 6u);
  EXPECT_EQ(seen.back().label, "c=8");
}

TEST_F(BenchEndToEnd, OpenLoopStartsRequestsAtTheRate) {
  BenchConfig c = Config(BenchMethod::kSort, BenchTransport::kUnary);
  c.rate = 200;
  c.requests = 50;
  auto rows = RunBench(c);
  ExpectClean(rows);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->front().rate, 200);
  EXPECT_EQ(rows->front().concurrency, 0);
  EXPECT_GE(rows->front().duration_s, 49 / 200.0);  // the schedule, not the server, sets the pace
}

// --ramp-linear 20:60 over 1 s in intervals of 0.25 s: four rows at the intervals' mean rates, each
// holding exactly the requests the schedule put in it (40 in all), every answer checked; the rows
// survive JSON.
TEST_F(BenchEndToEnd, ALinearRampGivesARowPerIntervalAsTheRateRises) {
  BenchConfig c = Config(BenchMethod::kSort, BenchTransport::kUnary);
  c.concurrency = {};
  c.requests = 0;
  c.duration_seconds = 1;
  c.linear_ramp_from = 20;
  c.linear_ramp_to = 60;
  c.ramp_interval_seconds = 0.25;
  auto rows = RunBench(c);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 4u);
  const LinearRamp ramp{.from = 20, .to = 60, .seconds = 1};
  uint64_t requests = 0;
  for (std::size_t b = 0; b < rows->size(); ++b) {
    const BenchRow& row = (*rows)[b];
    SCOPED_TRACE(b);
    EXPECT_TRUE(row.linear_ramp);
    EXPECT_DOUBLE_EQ(row.ramp_at_s, 0.25 * static_cast<double>(b));
    EXPECT_DOUBLE_EQ(row.duration_s, 0.25);
    EXPECT_DOUBLE_EQ(row.rate, 25 + 10 * static_cast<double>(b));  // 20 + 40 x the interval's midpoint
    EXPECT_EQ(row.concurrency, 0);
    EXPECT_EQ(row.errors, 0u) << ::testing::PrintToString(row.error_messages);
    uint64_t due = 0;
    for (uint64_t i = 0; i < 40; ++i) due += ramp.DueAt(i) >= row.ramp_at_s && ramp.DueAt(i) < row.ramp_at_s + 0.25;
    EXPECT_EQ(row.requests, due);
    requests += row.requests;
  }
  EXPECT_EQ(requests, 40u);
  EXPECT_LT((*rows)[0].requests, (*rows)[3].requests);
  auto parsed = ParseJson(ToJson({.server = c.server, .started_at = "now"}, *rows));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, *rows);
  EXPECT_THAT(ToTable(*rows), HasSubstr("25/s@0s"));
}

TEST_F(BenchEndToEnd, AnAlgorithmTheServerLacksFailsUpFront) {
  if (testing::TestingCuda()) GTEST_SKIP() << "the CUDA backend has the GPU algorithms";
  BenchConfig c = Config(BenchMethod::kSort, BenchTransport::kUnary);
  c.algorithm = Algorithm::kRadix;
  auto rows = RunBench(c);
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kUnimplemented) << rows.status();
  EXPECT_THAT(rows.status().message(), HasSubstr("the first request failed"));
}

TEST(BenchErrors, AnUnreachableServerIsCountedByCode) {
  BenchConfig c;
  c.server = "127.0.0.1:1";  // nothing listens on port 1
  c.concurrency = {2};
  c.requests = 20;
  c.warmup_seconds = 0;
  c.timeout_seconds = 5;
  auto rows = RunBench(c);
  ASSERT_TRUE(rows.ok()) << rows.status();
  const BenchRow& row = rows->front();
  EXPECT_EQ(row.requests, 0u);
  EXPECT_EQ(row.errors, 20u);
  EXPECT_EQ(row.errors_by_code, (std::map<std::string, uint64_t>{{"UNAVAILABLE", 20}}));
  EXPECT_EQ(row.error_messages.count("UNAVAILABLE"), 1u);
  EXPECT_EQ(row.latency_ms, LatencySummary{});
}

TEST(BenchErrors, WrongAnswersAreCountedAsSuch) {
  // The scripted backend sorts ascending whatever the request asks: descending answers are wrong.
  auto counters = std::make_shared<testing::ScriptedBackend::Counters>();
  counters->release = true;
  testing::TestServer server(testing::LoopbackConfig(), std::make_unique<testing::ScriptedBackend>(counters));
  BenchConfig c;
  c.server = server.address();
  c.descending = true;
  c.check = true;
  c.requests = 10;
  c.warmup_seconds = 0;
  auto rows = RunBench(c);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->front().errors_by_code, (std::map<std::string, uint64_t>{{"WRONG_ANSWER", 10}}));
}

TEST(BenchErrors, ConfigurationsThatCannotRunFailUpFront) {
  BenchConfig shm_echo;
  shm_echo.method = BenchMethod::kEcho;
  shm_echo.transport = BenchTransport::kShm;
  auto rows = RunBench(shm_echo);
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(rows.status().message(), HasSubstr("no shared-memory form"));

  BenchConfig shm_without_socket;
  shm_without_socket.transport = BenchTransport::kShm;
  EXPECT_THAT(RunBench(shm_without_socket).status().message(), HasSubstr("--shm-socket"));

  BenchConfig device_echo;
  device_echo.method = BenchMethod::kEcho;
  device_echo.transport = BenchTransport::kDevice;
  device_echo.shm_socket = "/tmp/unused.sock";
  EXPECT_THAT(RunBench(device_echo).status().message(), HasSubstr("no device-memory form"));
  BenchConfig device_without_socket;
  device_without_socket.transport = BenchTransport::kDevice;
  EXPECT_THAT(RunBench(device_without_socket).status().message(), HasSubstr("--transport device needs --shm-socket"));

  BenchConfig topk;
  topk.method = BenchMethod::kTopK;
  topk.k = 2000;  // more than --count
  EXPECT_EQ(RunBench(topk).status().code(), absl::StatusCode::kInvalidArgument);

  BenchConfig no_parts;
  no_parts.stream_parts = 0;
  EXPECT_THAT(RunBench(no_parts).status().message(), HasSubstr("--stream-parts"));
  BenchConfig parts_from_nothing;
  parts_from_nothing.stream_parts_from_bytes = 0;
  EXPECT_THAT(RunBench(parts_from_nothing).status().message(), HasSubstr("--stream-parts-from"));
}

}  // namespace
}  // namespace gpusort::cli
