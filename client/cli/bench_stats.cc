#include "client/cli/bench_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpusort::cli {

void Recorder::Ok(double latency_ms, std::size_t request_bytes, std::size_t response_bytes,
                  const StageTimes& stages_ms) {
  ++ok_;
  request_bytes_ += request_bytes;
  response_bytes_ += response_bytes;
  latencies_ms_.push_back(latency_ms);
  for (const auto& [stage, ms] : stages_ms) AddStage(stage, {ms});
}

void Recorder::AddStage(const std::string& stage, const std::vector<double>& ms) {
  auto it = std::find_if(stages_ms_.begin(), stages_ms_.end(), [&](const auto& s) { return s.first == stage; });
  if (it == stages_ms_.end()) it = stages_ms_.insert(stages_ms_.end(), {stage, {}});
  it->second.insert(it->second.end(), ms.begin(), ms.end());
}

void Recorder::Error(std::string_view code, std::string_view message) {
  const std::string key(code);
  ++errors_by_code_[key];
  first_messages_.try_emplace(key, message);
}

void Recorder::Merge(Recorder&& other) {
  ok_ += other.ok_;
  request_bytes_ += other.request_bytes_;
  response_bytes_ += other.response_bytes_;
  latencies_ms_.insert(latencies_ms_.end(), other.latencies_ms_.begin(), other.latencies_ms_.end());
  for (const auto& [code, n] : other.errors_by_code_) errors_by_code_[code] += n;
  first_messages_.merge(other.first_messages_);  // keeps this recorder's message where both have one
  for (const auto& [stage, ms] : other.stages_ms_) AddStage(stage, ms);
}

uint64_t Recorder::errors() const {
  uint64_t total = 0;
  for (const auto& [code, n] : errors_by_code_) total += n;
  return total;
}

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  // The epsilon keeps rounding in p / 100 * n (99.9 / 100 * 1000 = 999.0000000000001) from moving
  // the rank up by one.
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()) - 1e-9);
  const std::size_t index = static_cast<std::size_t>(std::max(rank, 1.0)) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

LatencySummary Summarize(std::vector<double> latencies_ms) {
  if (latencies_ms.empty()) return {};
  std::sort(latencies_ms.begin(), latencies_ms.end());
  LatencySummary s;
  s.mean = std::accumulate(latencies_ms.begin(), latencies_ms.end(), 0.0) /
           static_cast<double>(latencies_ms.size());
  s.p50 = Percentile(latencies_ms, 50);
  s.p90 = Percentile(latencies_ms, 90);
  s.p95 = Percentile(latencies_ms, 95);
  s.p99 = Percentile(latencies_ms, 99);
  s.p99_9 = Percentile(latencies_ms, 99.9);
  s.min = latencies_ms.front();
  s.max = latencies_ms.back();
  return s;
}

std::vector<LatencyBucket> Histogram(const std::vector<double>& latencies_ms) {
  if (latencies_ms.empty()) return {};
  std::vector<double> bounds;
  for (double decade = 0.01; decade < 1e7; decade *= 10)
    for (double step : {1.0, 2.0, 5.0}) bounds.push_back(decade * step);
  std::vector<uint64_t> counts(bounds.size() + 1, 0);  // the last: above every bound
  for (double ms : latencies_ms) {
    counts[std::lower_bound(bounds.begin(), bounds.end(), ms) - bounds.begin()]++;
  }
  std::size_t first = 0, last = counts.size() - 1;
  while (counts[first] == 0) ++first;
  while (counts[last] == 0) --last;
  std::vector<LatencyBucket> out;
  for (std::size_t i = first; i <= last; ++i) {
    out.push_back({i < bounds.size() ? bounds[i] : INFINITY, counts[i]});
  }
  return out;
}

StageTimes StageMedians(const std::vector<std::pair<std::string, std::vector<double>>>& stages_ms) {
  StageTimes out;
  for (const auto& [stage, ms] : stages_ms) {
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    out.emplace_back(stage, Percentile(sorted, 50));
  }
  return out;
}

}  // namespace gpusort::cli
