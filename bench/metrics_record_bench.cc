// What recording one call in the Prometheus metrics costs the server (Metrics::Record, once per call on
// the thread that answers it): one thread, then one per core at once, a small CPU Sort's record (4
// stages) and a GPU Sort's (7), beside the anchor: the same records through prometheus::Family::Add on
// every call, as Record did before metric_cache.h. Median of 7 rounds, nanoseconds a record.
//
//   build/bin/metrics_record_bench [records_per_round]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "server/core/execution_report.h"
#include "server/core/stage.h"
#include "server/service/metrics.h"
#include "server/service/request_record.h"

namespace {

using gpusort::Metrics;
using gpusort::RequestRecord;
using gpusort::Stage;
using gpusort::StageTime;

const std::vector<StageTime> kGpuStages = {{Stage::kValidate, 1e-6}, {Stage::kQueue, 2e-5}, {Stage::kPrepare, 1e-6},
                                           {Stage::kStreamWait, 4e-6}, {Stage::kH2d, 1e-4}, {Stage::kKernel, 8e-5},
                                           {Stage::kD2h, 9e-5}};
const std::vector<StageTime> kCpuStages = {
    {Stage::kValidate, 1e-6}, {Stage::kQueue, 2e-5}, {Stage::kPrepare, 1e-6}, {Stage::kSort, 3e-4}};

// The anchor: Record as it was, every metric found through its family's Add on every call.
class FamilyAddEveryCall {
 public:
  void Record(const RequestRecord& r) {
    const std::string method(r.method), algorithm(r.algorithm);
    requests_
        .Add({{"method", method},
              {"algorithm", algorithm},
              {"dtype", std::string(r.dtype)},
              {"code", std::string(r.code)}})
        .Increment();
    duration_.Add({{"method", method}, {"algorithm", algorithm}}, gpusort::LatencyBuckets()).Observe(r.seconds);
    if (r.keys > 0) keys_.Add({{"method", method}}).Increment(static_cast<double>(r.keys));
    for (const StageTime& s : *r.stages)
      stages_.Add({{"method", method}, {"stage", std::string(gpusort::StageName(s.stage))}}, gpusort::LatencyBuckets())
          .Observe(s.seconds);
  }

 private:
  prometheus::Registry registry_;
  prometheus::Family<prometheus::Counter>& requests_ = prometheus::BuildCounter().Name("r").Register(registry_);
  prometheus::Family<prometheus::Counter>& keys_ = prometheus::BuildCounter().Name("k").Register(registry_);
  prometheus::Family<prometheus::Histogram>& duration_ = prometheus::BuildHistogram().Name("d").Register(registry_);
  prometheus::Family<prometheus::Histogram>& stages_ = prometheus::BuildHistogram().Name("s").Register(registry_);
};

// Nanoseconds a record, over `records` records on each of `threads` threads at once.
template <typename Recorder>
double NanosPerRecord(Recorder& metrics, int threads, long records, const std::vector<StageTime>& stages) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const char* dtypes[] = {"u32", "f32", "i64", "bf16"};
      for (long i = 0; i < records; ++i) {
        RequestRecord r{.method = (i & 1) ? "Sort" : "TopK",
                        .algorithm = "RADIX",
                        .dtype = dtypes[(i + t) & 3],
                        .code = "OK",
                        .seconds = 1e-3,
                        .keys = 65536,
                        .stages = &stages};
        metrics.Record(r);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return seconds * 1e9 / static_cast<double>(records);  // per record of one thread (wall time)
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const long records = argc > 1 ? std::atol(argv[1]) : 200000;
  Metrics metrics("bench", "cuda");
  FamilyAddEveryCall anchor;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("| threads | stages | Metrics::Record, ns | Family::Add every call (anchor), ns | anchor / Record |\n"
              "|---:|---:|---:|---:|---:|\n");
  for (int threads : {1, cores}) {
    for (const auto* stages : {&kCpuStages, &kGpuStages}) {
      NanosPerRecord(metrics, threads, records / 10, *stages);  // warm-up: every label set exists
      NanosPerRecord(anchor, threads, records / 10, *stages);
      std::vector<double> ours, theirs;
      for (int round = 0; round < 7; ++round) {  // alternating, so drift falls on both alike
        ours.push_back(NanosPerRecord(metrics, threads, records, *stages));
        theirs.push_back(NanosPerRecord(anchor, threads, records, *stages));
      }
      std::printf("| %d | %zu | %.0f | %.0f | %.1fx |\n", threads, stages->size(), Median(ours), Median(theirs),
                  Median(theirs) / Median(ours));
    }
  }
  return 0;
}
