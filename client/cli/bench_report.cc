#include "client/cli/bench_report.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

namespace gpusort::cli {
namespace {

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
  return r;
}

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
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

// Closed loop: the concurrency; open loop: the rate.
std::string Load(const BenchRow& r) {
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

std::string ToCsv(const std::vector<BenchRow>& rows) {
  std::string out =
      "method,transport,dtype,count,concurrency,rate,connections,duration_s,requests,errors,"
      "errors_by_code,requests_per_s,keys_per_s,mb_per_s";
  for (const auto& [name, field] : kLatencyFields) out += std::string(",latency_") + name + "_ms";
  out += '\n';
  for (const BenchRow& r : rows) {
    std::vector<std::string> cells = {
        r.method, r.transport, r.dtype, std::to_string(r.count),
        r.concurrency > 0 ? std::to_string(r.concurrency) : "",
        r.rate > 0 ? Format("%.17g", r.rate) : "", std::to_string(r.connections),
        Format("%.6f", r.duration_s), std::to_string(r.requests), std::to_string(r.errors),
        CodesField(r.errors_by_code), Format("%.3f", r.requests_per_s), Format("%.1f", r.keys_per_s),
        Format("%.3f", r.mb_per_s)};
    for (const auto& [name, field] : kLatencyFields) cells.push_back(Format("%.6f", r.latency_ms.*field));
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
  for (const BenchRow& r : rows)
    for (const auto& [code, message] : r.error_messages)
      out += r.method + "/" + r.transport + " at " + Load(r) + ": " + code + ": " + message + "\n";
  return out;
}

}  // namespace gpusort::cli
