#include "server/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <new>
#include <string>
#include <utility>

#include <tbb/info.h>
#include <tbb/task_arena.h>

#include "server/backend/cpu/parallel.h"
#include "server/backend/cpu/sort.h"
#include "server/backend/cpu/topk.h"
#include "server/core/dtype.h"

namespace gpusort {
namespace {

bool Accepts(Algorithm a) { return a == Algorithm::kAuto || a == Algorithm::kCpu; }

// The service validates requests before they get here; these cheap checks only keep a caller that
// did not from writing out of bounds.
absl::Status CheckBuffers(const SortSpec& spec, const SortBuffers& b) {
  const std::size_t n = b.count;
  if (b.keys.size() != n * ElementSize(spec.dtype))
    return absl::InvalidArgumentError("sort: keys hold " + std::to_string(b.keys.size()) +
                                      " bytes, not count * element size");
  if (spec.payload == SortPayload::kValues &&
      (spec.value_width == 0 || b.values.size() != n * spec.value_width ||
       b.values_out.size() != n * spec.value_width))
    return absl::InvalidArgumentError("sort: values and values_out must hold count * value_width "
                                      "bytes, value_width >= 1");
  if (spec.payload == SortPayload::kIndices && b.indices_out.size() != n)
    return absl::InvalidArgumentError("sort: indices_out must hold count entries");
  return absl::OkStatus();
}

absl::Status CheckBuffers(const TopKSpec& spec, const TopKBuffers& b) {
  const std::size_t rows = spec.rows == 0 ? 1 : spec.rows;
  if (b.keys.size() != b.count * ElementSize(spec.dtype))
    return absl::InvalidArgumentError("topk: keys hold " + std::to_string(b.keys.size()) +
                                      " bytes, not count * element size");
  if (b.count % rows != 0)
    return absl::InvalidArgumentError("topk: rows (" + std::to_string(rows) +
                                      ") must divide the key count (" + std::to_string(b.count) + ")");
  if (spec.by_segments()) {
    if (spec.segment_offsets->back() != b.count || spec.k < 1)
      return absl::InvalidArgumentError("topk: segment offsets must end at the key count, and k be at least 1");
  } else {
    const std::size_t m = b.count / rows;
    if (spec.k < 1 || spec.k > m)
      return absl::InvalidArgumentError("topk: k (" + std::to_string(spec.k) + ") must be in 1.." +
                                        std::to_string(m));
  }
  const std::size_t results = spec.results();
  if (spec.wants_values() && b.values_out.size() != results * ElementSize(spec.dtype))
    return absl::InvalidArgumentError("topk: values_out must hold every result's key");
  if (spec.wants_indices() && b.indices_out.size() != results)
    return absl::InvalidArgumentError("topk: indices_out must hold every result's position");
  return absl::OkStatus();
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options)
      : threads_(options.threads > 0 ? options.threads : tbb::info::default_concurrency()),
        arena_(threads_),
        device_("cpu (" + std::to_string(threads_) + (threads_ == 1 ? " thread)" : " threads)")) {}

  BackendKind kind() const override { return BackendKind::kCpu; }
  bool SmallCallsAreCheap() const override { return true; }  // 4096 keys: tens of microseconds
  std::string device() const override { return device_; }  // made once: the router stamps it per request
  std::vector<Algorithm> sort_algorithms() const override { return {Algorithm::kCpu}; }
  std::vector<Algorithm> topk_algorithms() const override { return {Algorithm::kCpu}; }

  // Shared memory through private copies: the CPU sort reads its input more than once (backend.h).
  absl::Status Run(const Job& job) override {
    return RunInOwnMemory(
        job, [&](const SortSpec& spec, const SortBuffers& b) { return Sort(spec, b, job.cancellation, job.report); },
        [&](const TopKSpec& spec, const TopKBuffers& b) { return TopK(spec, b, job.cancellation, job.report); });
  }

 private:
  absl::Status Sort(const SortSpec& spec, const SortBuffers& buffers,
                    const Cancellation& cancellation, ExecutionReport& report) {
    if (!Accepts(spec.algorithm))
      return AlgorithmUnavailable("Sort", spec.algorithm, sort_algorithms(), "cpu");
    if (absl::Status s = CheckBuffers(spec, buffers); !s.ok()) return s;
    if (absl::Status s = cancellation.Check(); !s.ok()) return s;
    report.algorithm = Algorithm::kCpu;
    return OnThreads(buffers.count, [&] {
      return cpu::SortOnCpu(spec, buffers, threads_, cancellation, report);
    });
  }

  absl::Status TopK(const TopKSpec& spec, const TopKBuffers& buffers,
                    const Cancellation& cancellation, ExecutionReport& report) {
    if (!Accepts(spec.algorithm))
      return AlgorithmUnavailable("TopK", spec.algorithm, topk_algorithms(), "cpu");
    if (absl::Status s = CheckBuffers(spec, buffers); !s.ok()) return s;
    if (absl::Status s = cancellation.Check(); !s.ok()) return s;
    report.algorithm = Algorithm::kCpu;
    return OnThreads(buffers.count, [&] {
      return cpu::TopKOnCpu(spec, buffers, threads_, cancellation, report);
    });
  }

  // Small inputs run right here; larger ones inside the arena, so that they use at most threads_.
  template <typename F>
  absl::Status OnThreads(std::size_t n, F&& work) {
    try {
      if (threads_ <= 1 || n < cpu::kParallelMinElements) return work();
      return arena_.execute(std::forward<F>(work));
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError("cpu backend: out of memory for scratch buffers (" +
                                          std::to_string(n) + " keys)");
    }
  }

  const int threads_;
  tbb::task_arena arena_;
  const std::string device_;
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace gpusort
