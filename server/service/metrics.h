// Every Prometheus metric the server exports is declared here and built in one constructor, so the
// names in deploy/ (dashboards, alert rules) have one place to be checked against.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "server/core/execution_report.h"
#include "server/service/metric_cache.h"
#include "server/service/request_record.h"

namespace gpusort {

class Metrics {
 public:
  Metrics(std::string_view version, std::string_view backend);

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  void Record(const RequestRecord& record);
  prometheus::Gauge& inflight() { return *inflight_; }
  prometheus::Gauge& queue_depth() { return *queue_depth_; }
  // gpusort_device_memory_bytes{device,kind}: set from the backend's readings at each scrape
  // (DeviceMemoryRefresh).
  void SetDeviceMemory(std::string_view device, std::string_view kind, double bytes);
  // gpusort_device_serving{device}: 1 while that GPU serves, 0 once it failed; set at each scrape.
  void SetDeviceServing(std::string_view device, bool serving);
  // gpusort_device_requests_total{device}: requests a GPU served (each GPU of a request split across
  // several counts it), from the report's device, e.g. "cuda:0 NVIDIA H100 80GB HBM3, cuda:1 ...".
  void RecordDevices(std::string_view report_device);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Counter>& keys_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Family<prometheus::Histogram>& stage_duration_;
  prometheus::Gauge* inflight_;
  prometheus::Gauge* queue_depth_;
  prometheus::Family<prometheus::Gauge>& device_memory_;
  prometheus::Family<prometheus::Gauge>& device_serving_;
  prometheus::Family<prometheus::Counter>& device_requests_;
  // Record's and RecordDevices' metrics by their label values (metric_cache.h).
  MetricCache<prometheus::Counter> requests_by_labels_, keys_by_method_, device_requests_by_device_;
  MetricCache<prometheus::Histogram> duration_by_labels_, stage_duration_by_labels_;
};

// Bucket boundaries, in seconds, shared by the latency histograms: 50 us to 2 min.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets();

}  // namespace gpusort
