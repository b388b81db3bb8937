// The engine seam: one implementation per kind of device (CPU now, CUDA next). The service validates a
// request completely before it calls a backend, so backends may assume consistent specs and buffers;
// they still answer UNIMPLEMENTED for algorithms they do not have and honour cancellation.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "server/core/cancellation.h"
#include "server/core/execution_report.h"
#include "server/core/spec.h"

namespace gpusort {


class Backend {
 public:
  virtual ~Backend() = default;

  virtual BackendKind kind() const = 0;
  // Human-readable device, e.g. "cpu (2 threads)"; goes into ExecutionInfo.device.
  virtual std::string device() const = 0;
  // Algorithms this backend can run for Sort and for TopK (AUTO is always accepted as well).
  virtual std::vector<Algorithm> sort_algorithms() const = 0;
  virtual std::vector<Algorithm> topk_algorithms() const = 0;
  // Memory the backend holds on its devices, for the gpusort_device_memory_bytes gauge.
  struct MemoryReading {
    std::string device;  // "cuda:0"
    std::string kind;    // "pool_used", "pool_reserved", "device_used", "device_total"
    double bytes = 0;
  };
  virtual std::vector<MemoryReading> memory() const { return {}; }

  // Sorts buffers.keys in place and fills values_out / indices_out as spec.payload asks.
  virtual absl::Status Sort(const SortSpec& spec, const SortBuffers& buffers,
                            const Cancellation& cancellation, ExecutionReport& report) = 0;
  // Fills values_out / indices_out with each row's top-k, as the proto defines it.
  virtual absl::Status TopK(const TopKSpec& spec, const TopKBuffers& buffers,
                            const Cancellation& cancellation, ExecutionReport& report) = 0;
};

std::string_view BackendKindName(BackendKind kind);  // "cpu", "cuda"

// UNIMPLEMENTED naming what was asked and what this backend has, for a consistent message.
absl::Status AlgorithmUnavailable(std::string_view method, Algorithm asked,
                                  const std::vector<Algorithm>& available,
                                  std::string_view backend);

}  // namespace gpusort
