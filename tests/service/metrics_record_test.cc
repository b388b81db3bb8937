// Metrics::Record keeps each label set's metrics after the first lookup (metric_cache.h): from many
// threads at once, every record must still land on the metric of exactly its own labels.
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <prometheus/metric_family.h>

#include "server/service/metrics.h"

namespace gpusort {
namespace {

// Each metric of `name` in the registry, by its labels ("k=v,k=v" in label order): a counter's value or
// a histogram's count.
std::map<std::string, double> Collected(const Metrics& metrics, const std::string& name) {
  std::map<std::string, double> out;
  for (const prometheus::MetricFamily& family : metrics.registry()->Collect()) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      std::string labels;
      for (const prometheus::ClientMetric::Label& label : metric.label) labels += label.name + "=" + label.value + ",";
      out[labels] = family.type == prometheus::MetricType::Histogram
                        ? static_cast<double>(metric.histogram.sample_count)
                        : metric.counter.value;
    }
  }
  return out;
}

TEST(MetricsRecord, EveryRecordLandsOnItsOwnLabelsFromManyThreads) {
  Metrics metrics("test", "cpu");
  // Label values that would run together without a separator in the cache's key ("Sort" + "cpu" and
  // "Sortc" + "pu"), and one stage list shared by all.
  const std::vector<std::pair<std::string, std::string>> methods = {
      {"Sort", "cpu"}, {"Sortc", "pu"}, {"TopK", "radix"}};
  const std::vector<std::string> dtypes = {"u32", "f32"};
  const std::vector<StageTime> stages = {{Stage::kValidate, 1e-6}, {Stage::kSort, 1e-4}};
  constexpr int kThreads = 8, kRounds = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        for (const auto& [method, algorithm] : methods) {
          for (const std::string& dtype : dtypes) {
            metrics.Record({.method = method, .algorithm = algorithm, .dtype = dtype, .code = "OK",
                            .seconds = 1e-3, .keys = 10, .stages = &stages});
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();

  const double each = kThreads * kRounds;
  const auto requests = Collected(metrics, "gpusort_requests_total");
  ASSERT_EQ(requests.size(), methods.size() * dtypes.size());
  for (const auto& [method, algorithm] : methods) {
    for (const std::string& dtype : dtypes) {
      const std::string labels = "algorithm=" + algorithm + ",code=OK,dtype=" + dtype + ",method=" + method + ",";
      ASSERT_TRUE(requests.count(labels)) << labels;
      EXPECT_EQ(requests.at(labels), each) << labels;
    }
  }
  const auto keys = Collected(metrics, "gpusort_keys_total");
  ASSERT_EQ(keys.size(), methods.size());
  EXPECT_EQ(keys.at("method=Sortc,"), each * 10 * dtypes.size());
  const auto durations = Collected(metrics, "gpusort_request_duration_seconds");
  ASSERT_EQ(durations.size(), methods.size());
  EXPECT_EQ(durations.at("algorithm=pu,method=Sortc,"), each * dtypes.size());
  const auto stage_durations = Collected(metrics, "gpusort_stage_duration_seconds");
  ASSERT_EQ(stage_durations.size(), methods.size() * stages.size());
  EXPECT_EQ(stage_durations.at("method=TopK,stage=sort,"), each * dtypes.size());
}

TEST(MetricsRecord, EachGpuOfAReportIsCountedOnItsOwnDevice) {
  Metrics metrics("test", "cuda");
  metrics.RecordDevices("cuda:0 NVIDIA H100, cuda:1 NVIDIA H100");
  metrics.RecordDevices("cuda:1 NVIDIA H100");
  metrics.RecordDevices("cuda:10 NVIDIA H100");
  metrics.RecordDevices("cpu (16 threads)");
  const auto devices = Collected(metrics, "gpusort_device_requests_total");
  EXPECT_EQ(devices,
            (std::map<std::string, double>{{"device=cuda:0,", 1}, {"device=cuda:1,", 2}, {"device=cuda:10,", 1}}));
}

}  // namespace
}  // namespace gpusort
