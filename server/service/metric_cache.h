// The metrics of one label set, looked up once. prometheus::Family::Add builds a label map, hashes it
// and takes the family's lock on every call; Metrics::Record made 4-12 such calls a request: 1.4-2.1 us
// a record on one core of this 2-core machine, 4.4-6.9 us with both cores recording, against 0.37-0.55
// and 1.8-2.6 us kept here (bench/metrics_record_bench.cc, BENCHMARKS.md), beside a 30-40 us call on
// the shared-memory socket. The server's label sets are few (its methods, algorithms, dtypes, status
// codes, stages and GPUs, never a caller's text) and a family never drops one here, so each metric is
// kept by a key made of its label values and found again under a shared lock.
#pragma once

#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace gpusort {

template <typename Metric>
class MetricCache {
 public:
  // The metric kept for `key`, or the one `add` returns (the family's Add), kept from then on.
  template <typename Add>
  Metric& Get(std::string_view key, Add&& add) {
    {
      std::shared_lock lock(mutex_);
      if (auto it = metrics_.find(key); it != metrics_.end()) return *it->second;
    }
    std::lock_guard lock(mutex_);
    auto [it, added] = metrics_.try_emplace(std::string(key), nullptr);
    if (added) it->second = &std::forward<Add>(add)();
    return *it->second;
  }

 private:
  // Found by a string_view key without making a string of it.
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };
  std::shared_mutex mutex_;
  std::unordered_map<std::string, Metric*, KeyHash, std::equal_to<>> metrics_;
};

// A cache key of label values: each followed by a byte no label value here contains.
template <typename... Values>
std::string MetricKey(const Values&... values) {
  std::string key;
  key.reserve((std::string_view(values).size() + ...) + sizeof...(values));
  ((key.append(std::string_view(values)), key.push_back('\x1f')), ...);
  return key;
}

}  // namespace gpusort
