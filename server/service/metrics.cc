#include "server/service/metrics.h"

namespace gpusort {

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1,     0.25,   0.5,     1,      2.5,   5,      10,    30,   60,    120};
  return kBuckets;
}

Metrics::Metrics(std::string_view version, std::string_view backend)
    : registry_(std::make_shared<prometheus::Registry>()),
      requests_(prometheus::BuildCounter()
                    .Name("gpusort_requests_total")
                    .Help("Finished calls by method, algorithm that ran, dtype and gRPC status code")
                    .Register(*registry_)),
      keys_(prometheus::BuildCounter()
                .Name("gpusort_keys_total")
                .Help("Keys sorted or searched by successful calls")
                .Register(*registry_)),
      duration_(prometheus::BuildHistogram()
                    .Name("gpusort_request_duration_seconds")
                    .Help("Server-side time from a call's arrival to its reply")
                    .Register(*registry_)),
      stage_duration_(prometheus::BuildHistogram()
                          .Name("gpusort_stage_duration_seconds")
                          .Help("Time of each stage of successful calls, by method (validate, queue, sort, h2d, ...)")
                          .Register(*registry_)),
      device_memory_(prometheus::BuildGauge()
                         .Name("gpusort_device_memory_bytes")
                         .Help("GPU memory: pool_used (held by requests now), stream_kept (kept by the streams "
                               "for their jobs' buffers), pool_reserved (cached by the pool), device_used and "
                               "device_total (as the driver sees the device)")
                         .Register(*registry_)),
      device_serving_(prometheus::BuildGauge()
                          .Name("gpusort_device_serving")
                          .Help("1 while the GPU serves, 0 once it failed (a server on several GPUs serves on "
                                "from the others)")
                          .Register(*registry_)),
      device_requests_(prometheus::BuildCounter()
                           .Name("gpusort_device_requests_total")
                           .Help("Requests each GPU served (a request split across GPUs counts on each)")
                           .Register(*registry_)) {
  inflight_ = &prometheus::BuildGauge()
                   .Name("gpusort_inflight_requests")
                   .Help("Calls admitted and not yet answered")
                   .Register(*registry_)
                   .Add({});
  queue_depth_ = &prometheus::BuildGauge()
                      .Name("gpusort_queue_depth")
                      .Help("Jobs waiting for a worker thread")
                      .Register(*registry_)
                      .Add({});
  prometheus::BuildGauge()
      .Name("gpusort_build_info")
      .Help("Always 1; labels say the version and the backend serving")
      .Register(*registry_)
      .Add({{"version", std::string(version)}, {"backend", std::string(backend)}})
      .Set(1);
}

void Metrics::SetDeviceMemory(std::string_view device, std::string_view kind, double bytes) {
  device_memory_.Add({{"device", std::string(device)}, {"kind", std::string(kind)}}).Set(bytes);
}

void Metrics::SetDeviceServing(std::string_view device, bool serving) {
  device_serving_.Add({{"device", std::string(device)}}).Set(serving ? 1 : 0);
}

void Metrics::RecordDevices(std::string_view report_device) {
  // Each "cuda:N" the device string names; the rest of each name (the GPU's model) is left out.
  for (std::size_t at = report_device.find("cuda:"); at != std::string_view::npos;
       at = report_device.find("cuda:", at + 5)) {
    std::size_t end = at + 5;
    while (end < report_device.size() && report_device[end] >= '0' && report_device[end] <= '9') ++end;
    if (end == at + 5) continue;
    const std::string_view device = report_device.substr(at, end - at);
    device_requests_by_device_
        .Get(device, [&]() -> prometheus::Counter& { return device_requests_.Add({{"device", std::string(device)}}); })
        .Increment();
  }
}

void Metrics::Record(const RequestRecord& r) {
  requests_by_labels_
      .Get(MetricKey(r.method, r.algorithm, r.dtype, r.code),
           [&]() -> prometheus::Counter& {
             return requests_.Add({{"method", std::string(r.method)},
                                   {"algorithm", std::string(r.algorithm)},
                                   {"dtype", std::string(r.dtype)},
                                   {"code", std::string(r.code)}});
           })
      .Increment();
  duration_by_labels_
      .Get(MetricKey(r.method, r.algorithm),
           [&]() -> prometheus::Histogram& {
             return duration_.Add({{"method", std::string(r.method)}, {"algorithm", std::string(r.algorithm)}},
                                  LatencyBuckets());
           })
      .Observe(r.seconds);
  if (r.keys > 0) {
    keys_by_method_
        .Get(r.method, [&]() -> prometheus::Counter& { return keys_.Add({{"method", std::string(r.method)}}); })
        .Increment(static_cast<double>(r.keys));
  }
  if (r.stages != nullptr) {
    for (const StageTime& s : *r.stages) {
      const std::string_view stage = StageName(s.stage);
      stage_duration_by_labels_
          .Get(MetricKey(r.method, stage),
               [&]() -> prometheus::Histogram& {
                 return stage_duration_.Add({{"method", std::string(r.method)}, {"stage", std::string(stage)}},
                                            LatencyBuckets());
               })
          .Observe(s.seconds);
    }
  }
}

}  // namespace gpusort
