// `gpusort bench` results as an aligned table (for people), JSON (one object, for scripts) or CSV
// (a header and a line per row, for spreadsheets).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "client/cli/bench_stats.h"

namespace gpusort::cli {

struct ReportHeader {
  std::string server;
  std::string started_at;  // ISO 8601, UTC
};

std::string Iso8601Utc(std::chrono::system_clock::time_point t);

// {"tool":"gpusort bench","version":1,"server":...,"started_at":...,"rows":[...]}
std::string ToJson(const ReportHeader& header, const std::vector<BenchRow>& rows);
// The rows of a ToJson document.
absl::StatusOr<std::vector<BenchRow>> ParseJson(std::string_view json);
// errors_by_code is one field, CODE:n;CODE:n.
std::string ToCsv(const std::vector<BenchRow>& rows);
std::string ToTable(const std::vector<BenchRow>& rows);

}  // namespace gpusort::cli
