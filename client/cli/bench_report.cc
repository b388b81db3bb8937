#include "client/cli/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

namespace gpusort::cli {
namespace {

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

using Json = nlohmann::ordered_json;  // fields stay in the order written, for people reading it

constexpr const char* kMbNote =
    "mb_per_s: request plus response array bytes (keys, values, indices; no gRPC framing) of the "
    "successful requests per second; 1 MB = 1e6 bytes";
constexpr const char* kLatencyNote =
    "latency_ms: successful requests, nearest-rank percentiles over every request; open loop "
    "(rate): from each request's scheduled start";

struct Percentiles {
  const char* name;
  double LatencySummary::*field;
};
constexpr Percentiles kLatencyFields[] = {
    {"mean", &LatencySummary::mean}, {"p50", &LatencySummary::p50},   {"p90", &LatencySummary::p90},
    {"p95", &LatencySummary::p95},   {"p99", &LatencySummary::p99},   {"p99_9", &LatencySummary::p99_9},
    {"max", &LatencySummary::max},   {"min", &LatencySummary::min}};

Json RowJson(const BenchRow& r) {
  Json latency;
  for (const auto& [name, field] : kLatencyFields) latency[name] = r.latency_ms.*field;
  Json row;
  row["method"] = r.method;
  row["transport"] = r.transport;
  row["dtype"] = r.dtype;
  row["count"] = r.count;
  row["concurrency"] = r.concurrency > 0 ? Json(r.concurrency) : Json(nullptr);
  row["rate"] = r.rate > 0 ? Json(r.rate) : Json(nullptr);
  row["ramp_at_s"] = r.linear_ramp ? Json(r.ramp_at_s) : Json(nullptr);
  row["connections"] = r.connections;
  row["duration_s"] = r.duration_s;
  row["requests"] = r.requests;
  row["errors"] = r.errors;
  row["errors_by_code"] = Json::object();
  for (const auto& [code, n] : r.errors_by_code) row["errors_by_code"][code] = n;
  row["error_messages"] = Json::object();
  for (const auto& [code, message] : r.error_messages) row["error_messages"][code] = message;
  row["requests_per_s"] = r.requests_per_s;
  row["keys_per_s"] = r.keys_per_s;
  row["mb_per_s"] = r.mb_per_s;
  row["latency_ms"] = latency;
  row["latency_histogram_ms"] = Json::array();
  for (const LatencyBucket& b : r.latency_histogram) {
    row["latency_histogram_ms"].push_back({{"le", std::isinf(b.le_ms) ? Json("inf") : Json(b.le_ms)}, {"count", b.count}});
  }
  row["server_stage_p50_ms"] = Json::object();
  for (const auto& [stage, ms] : r.stage_p50_ms) row["server_stage_p50_ms"][stage] = ms;
  Json params;
  params["k"] = r.k;
  params["rows"] = r.rows;
  params["algorithm"] = r.algorithm;
  params["distribution"] = r.distribution;
  params["seed"] = r.seed;
  params["payloads"] = r.payloads;
  params["descending"] = r.descending;
  params["argsort"] = r.argsort;
  params["check"] = r.check;
  params["keys_from"] = r.keys_from;
  params["stable_percent"] = r.stable_percent;
  row["params"] = params;
  row["repetitions"] = r.repetitions;
  row["stable"] = r.stable;
  return row;
}

BenchRow RowFromJson(const Json& j) {
  BenchRow r;
  r.method = j.at("method").get<std::string>();
  r.transport = j.at("transport").get<std::string>();
  r.dtype = j.at("dtype").get<std::string>();
  r.count = j.at("count").get<uint64_t>();
  r.concurrency = j.at("concurrency").is_null() ? 0 : j.at("concurrency").get<int>();
  r.rate = j.at("rate").is_null() ? 0 : j.at("rate").get<double>();
  // Fields added after version 1's first rows are absent in older files (as below).
  if (j.contains("ramp_at_s") && !j.at("ramp_at_s").is_null()) {
    r.linear_ramp = true;
    r.ramp_at_s = j.at("ramp_at_s").get<double>();
  }
  r.connections = j.at("connections").get<int>();
  r.duration_s = j.at("duration_s").get<double>();
  r.requests = j.at("requests").get<uint64_t>();
  r.errors = j.at("errors").get<uint64_t>();
  for (const auto& [code, n] : j.at("errors_by_code").items()) r.errors_by_code[code] = n.get<uint64_t>();
  for (const auto& [code, m] : j.at("error_messages").items())
    r.error_messages[code] = m.get<std::string>();
  r.requests_per_s = j.at("requests_per_s").get<double>();
  r.keys_per_s = j.at("keys_per_s").get<double>();
  r.mb_per_s = j.at("mb_per_s").get<double>();
  for (const auto& [name, field] : kLatencyFields)
    r.latency_ms.*field = j.at("latency_ms").at(name).get<double>();
  // Fields added after version 1's first rows: absent in older files.
  if (j.contains("latency_histogram_ms")) {
    for (const Json& b : j.at("latency_histogram_ms")) {
      const Json& le = b.at("le");
      r.latency_histogram.push_back({le.is_string() ? INFINITY : le.get<double>(), b.at("count").get<uint64_t>()});
    }
  }
  if (j.contains("server_stage_p50_ms")) {
    for (const auto& [stage, ms] : j.at("server_stage_p50_ms").items()) r.stage_p50_ms.emplace_back(stage, ms.get<double>());
  }
  if (j.contains("params")) {
    const Json& p = j.at("params");
    r.k = p.at("k").get<uint64_t>();
    r.rows = p.value("rows", uint64_t{1});  // added after the first params
    r.algorithm = p.at("algorithm").get<std::string>();
    r.distribution = p.at("distribution").get<std::string>();
    r.seed = p.at("seed").get<uint64_t>();
    r.payloads = p.at("payloads").get<int>();
    r.descending = p.at("descending").get<bool>();
    r.argsort = p.at("argsort").get<bool>();
    r.check = p.at("check").get<bool>();
    r.keys_from = p.at("keys_from").get<std::string>();
    r.stable_percent = p.value("stable_percent", 0.0);
  }
  r.repetitions = j.value("repetitions", 1);
  r.stable = j.value("stable", false);
  return r;
}

// stage=ms, stage=ms, for the table's footnote.
std::string StagesField(const StageTimes& stages, const char* separator) {
  std::string out;
  for (const auto& [stage, ms] : stages) {
    if (!out.empty()) out += separator;
    out += stage + "=" + Format("%.3f", ms);
  }
  return out;
}


// 1234567 -> "1.23M": rates span nine orders of magnitude across sizes and methods.
std::string Si(double v) {
  if (v >= 1e9) return Format("%.2fG", v / 1e9);
  if (v >= 1e6) return Format("%.2fM", v / 1e6);
  if (v >= 1e3) return Format("%.2fk", v / 1e3);
  return Format("%.1f", v);
}

std::string CodesField(const std::map<std::string, uint64_t>& errors_by_code) {
  std::string out;
  for (const auto& [code, n] : errors_by_code) {
    if (!out.empty()) out += ';';
    out += code + ":" + std::to_string(n);
  }
  return out;
}

// Closed loop: the concurrency; open loop: the rate; a linear ramp's interval: its mean rate and
// where it starts ("25/s@1.5s").
std::string Load(const BenchRow& r) {
  if (r.linear_ramp) return Format("%.4g/s", r.rate) + Format("@%gs", r.ramp_at_s);
  return r.rate > 0 ? Format("%g/s", r.rate) : std::to_string(r.concurrency);
}

}  // namespace

std::string Iso8601Utc(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string ToJson(const ReportHeader& header, const std::vector<BenchRow>& rows) {
  Json doc;
  doc["tool"] = "gpusort bench";
  doc["version"] = 1;
  doc["server"] = header.server;
  doc["started_at"] = header.started_at;
  doc["mb_per_s_note"] = kMbNote;
  doc["latency_note"] = kLatencyNote;
  doc["rows"] = Json::array();
  for (const BenchRow& r : rows) doc["rows"].push_back(RowJson(r));
  return doc.dump(2) + "\n";
}

absl::StatusOr<std::vector<BenchRow>> ParseJson(std::string_view json) {
  try {
    const Json doc = Json::parse(json);
    std::vector<BenchRow> rows;
    for (const Json& row : doc.at("rows")) rows.push_back(RowFromJson(row));
    return rows;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(std::string("not a gpusort bench report: ") + e.what());
  }
}

namespace {

// The CSV's stage columns: sort.proto's StageTime list in its order (server/core/stage.h), then any other
// name the rows hold (a newer server's), so that a spreadsheet finds each stage in a column of its own.
std::vector<std::string> StageColumns(const std::vector<BenchRow>& rows) {
  std::vector<std::string> names = {"receive", "validate", "parts_wait", "queue", "snapshot", "stream_wait",
                                    "prepare", "h2d", "kernel", "d2h", "sort", "select", "gather", "merge",
                                    "device_merge", "write_back", "send"};
  for (const BenchRow& r : rows) {
    for (const auto& [stage, ms] : r.stage_p50_ms) {
      if (std::find(names.begin(), names.end(), stage) == names.end()) names.push_back(stage);
    }
  }
  return names;
}

// A row's median time in `stage`, or an empty cell when its requests never met it.
std::string StageCell(const BenchRow& r, const std::string& stage) {
  for (const auto& [name, ms] : r.stage_p50_ms) {
    if (name == stage) return Format("%.3f", ms);
  }
  return "";
}

}  // namespace

std::string ToCsv(const std::vector<BenchRow>& rows) {
  const std::vector<std::string> stages = StageColumns(rows);
  std::string out =
      "method,transport,dtype,count,concurrency,rate,connections,duration_s,requests,errors,"
      "errors_by_code,requests_per_s,keys_per_s,mb_per_s";
  for (const auto& [name, field] : kLatencyFields) out += std::string(",latency_") + name + "_ms";
  for (const std::string& stage : stages) out += ",stage_" + stage + "_p50_ms";
  // check (0 or 1) last: a row never ends in an empty field (keys_from and the stages may be empty).
  out += ",k,rows,algorithm,distribution,seed,payloads,descending,argsort,keys_from,stable_percent,"
         "repetitions,stable,ramp_at_s,check\n";
  for (const BenchRow& r : rows) {
    std::vector<std::string> cells = {
        r.method, r.transport, r.dtype, std::to_string(r.count),
        r.concurrency > 0 ? std::to_string(r.concurrency) : "",
        r.rate > 0 ? Format("%.17g", r.rate) : "", std::to_string(r.connections),
        Format("%.6f", r.duration_s), std::to_string(r.requests), std::to_string(r.errors),
        CodesField(r.errors_by_code), Format("%.3f", r.requests_per_s), Format("%.1f", r.keys_per_s),
        Format("%.3f", r.mb_per_s)};
    for (const auto& [name, field] : kLatencyFields) cells.push_back(Format("%.6f", r.latency_ms.*field));
    for (const std::string& stage : stages) cells.push_back(StageCell(r, stage));
    for (std::string cell : {std::to_string(r.k), std::to_string(r.rows), r.algorithm, r.distribution,
                             std::to_string(r.seed), std::to_string(r.payloads), std::string(r.descending ? "1" : "0"),
                             std::string(r.argsort ? "1" : "0"), r.keys_from, Format("%g", r.stable_percent),
                             std::to_string(r.repetitions), std::string(r.stable ? "1" : "0"),
                             r.linear_ramp ? Format("%.6f", r.ramp_at_s) : "", std::string(r.check ? "1" : "0")}) {
      cells.push_back(std::move(cell));
    }
    for (std::size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + cells[i];
    out += '\n';
  }
  return out;
}

std::string ToTable(const std::vector<BenchRow>& rows) {
  std::vector<std::vector<std::string>> table = {
      {"method", "transport", "dtype", "count", "load", "conns", "secs", "ok", "errors", "req/s",
       "keys/s", "MB/s", "mean", "p50", "p90", "p95", "p99", "p99.9", "max", "error codes"}};
  for (const BenchRow& r : rows) {
    const LatencySummary& l = r.latency_ms;
    std::vector<std::string> cells = {
        r.method, r.transport, r.dtype, std::to_string(r.count), Load(r), std::to_string(r.connections),
        Format("%.2f", r.duration_s), std::to_string(r.requests), std::to_string(r.errors),
        Si(r.requests_per_s), Si(r.keys_per_s), Format("%.1f", r.mb_per_s)};
    // No successful request: no latency to show (zeros would read as a very fast server).
    for (double ms : {l.mean, l.p50, l.p90, l.p95, l.p99, l.p99_9, l.max})
      cells.push_back(r.requests == 0 ? "-" : Format("%.3f", ms));
    cells.push_back(CodesField(r.errors_by_code));
    table.push_back(std::move(cells));
  }
  std::vector<std::size_t> widths(table[0].size(), 0);
  for (const auto& line : table)
    for (std::size_t i = 0; i < line.size(); ++i) widths[i] = std::max(widths[i], line[i].size());
  std::string out;
  for (const auto& line : table) {
    std::string text;
    for (std::size_t i = 0; i < line.size(); ++i) {
      // Names left, numbers right; the last column is left ragged.
      const std::string pad(widths[i] - line[i].size(), ' ');
      const bool left = i < 3 || i + 1 == line.size();
      text += (i ? "  " : "") + (left ? line[i] + (i + 1 == line.size() ? "" : pad) : pad + line[i]);
    }
    out += text.substr(0, text.find_last_not_of(' ') + 1) + '\n';
  }
  out += "load: requests in flight (closed loop) or started per second (open loop). Latency in ms, "
         "successful requests only.\nMB/s: request + response array bytes, 1 MB = 1e6 bytes.\n";
  if (std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return r.linear_ramp; })) {
    out += "--ramp-linear: a row per interval of the ramp (rate/s@start), its requests those due in it.\n";
  }
  for (const BenchRow& r : rows) {
    if (r.stable_percent > 0) {
      out += r.method + "/" + r.transport + " at " + Load(r) + ": " + std::to_string(r.repetitions) +
             " measurements; p50 and p99 " + (r.stable ? "settled within " : "still moved more than ") +
             Format("%g", r.stable_percent) + "%\n";
    }
    if (!r.stage_p50_ms.empty()) {
      out += r.method + "/" + r.transport + " at " + Load(r) + ": server stages, median ms: " +
             StagesField(r.stage_p50_ms, ", ") + "\n";
    }
  }
  for (const BenchRow& r : rows)
    for (const auto& [code, message] : r.error_messages)
      out += r.method + "/" + r.transport + " at " + Load(r) + ": " + code + ": " + message + "\n";
  return out;
}

}  // namespace gpusort::cli
