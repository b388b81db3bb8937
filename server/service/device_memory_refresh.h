// Reads the backend's device memory into gpusort_device_memory_bytes, and which GPUs serve into
// gpusort_device_serving, as /metrics is scraped, so that the gauges say what is held now. (They used to be set as each call ended, from inside that call, so
// after the load stopped pool_used still showed the last call's own memory: the GPU soak read 128 MiB
// "held" with nothing running.) /metrics calls it before it collects the registry it fills.
#pragma once

#include "server/backend/backend.h"
#include "server/service/metrics.h"

namespace gpusort {

class DeviceMemoryRefresh {
 public:
  DeviceMemoryRefresh(const Backend& backend, Metrics& metrics) : backend_(backend), metrics_(metrics) {}

  void Refresh() const {
    for (const Backend::MemoryReading& m : backend_.memory()) metrics_.SetDeviceMemory(m.device, m.kind, m.bytes);
    for (const Backend::DeviceServing& d : backend_.devices()) metrics_.SetDeviceServing(d.device, d.status.ok());
  }

 private:
  const Backend& backend_;
  Metrics& metrics_;
};

}  // namespace gpusort
