#include "server/backend/sort_in_runs.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>

#include "server/backend/cpu/parallel.h"
#include "server/backend/cpu/run_merge.h"
#include "server/core/dtype.h"
#include "server/core/status_macros.h"
#include "server/core/thread_name.h"

namespace gpusort {
namespace {

// The device memory one run may count on, as a share of what the engine has: the sort's own
// workspace (CUB's temporary storage, the pool's rounding) and other requests take the rest.
constexpr std::size_t kRunMemoryShareDivisor = 4;

struct Run {
  std::size_t begin = 0, end = 0;
};

std::vector<Run> CutRuns(std::size_t n, std::size_t run_keys, std::size_t engines) {
  const std::size_t by_size = (n + run_keys - 1) / std::max<std::size_t>(run_keys, 1);
  // As many runs on each engine, so that every GPU takes an equal share (and none waits on another's
  // second run), and at least one each.
  engines = std::max<std::size_t>(std::min(engines, n), 1);
  const std::size_t count = std::max<std::size_t>((by_size + engines - 1) / engines * engines, 1);
  std::vector<Run> runs(count);
  for (std::size_t r = 0; r < count; ++r) runs[r] = {cpu::ChunkBegin(n, count, r), cpu::ChunkBegin(n, count, r + 1)};
  return runs;
}

// Runs `work(run index, engine, report)` for every run: each engine on its own thread, its runs one
// after another. The first error stops every engine before its next run and is what returns.
template <typename Work>
absl::Status ForEachRun(std::size_t run_count, const RunPlan& plan, const Cancellation& cancellation,
                        std::vector<ExecutionReport>& reports, Work work) {
  reports.assign(run_count, ExecutionReport{});
  std::mutex mutex;
  absl::Status first_error;
  std::atomic<bool> failed{false};
  auto engine_loop = [&](std::size_t e) {
    for (std::size_t r = e; r < run_count; r += plan.engines.size()) {
      if (failed.load(std::memory_order_relaxed)) return;
      absl::Status status = cancellation.Check();
      if (status.ok()) status = work(r, *plan.engines[e], reports[r]);
      if (!status.ok()) {
        const std::lock_guard lock(mutex);
        if (first_error.ok()) first_error = std::move(status);
        failed.store(true, std::memory_order_relaxed);
        return;
      }
    }
  };
  const std::size_t engines = std::min(plan.engines.size(), run_count);
  std::vector<std::thread> threads;
  for (std::size_t e = 1; e < engines; ++e) threads.emplace_back(engine_loop, e);
  engine_loop(0);
  for (std::thread& t : threads) t.join();
  return first_error;
}

// Runs handed over as they are sorted, each then passed to `move` on the mover's own thread, in order.
class RunMover {
 public:
  explicit RunMover(std::function<void(std::size_t)> move) : move_(std::move(move)), thread_([this] { Loop(); }) {}
  ~RunMover() { Finish(); }
  RunMover(const RunMover&) = delete;
  RunMover& operator=(const RunMover&) = delete;

  void Push(std::size_t r) {
    {
      const std::lock_guard lock(mutex_);
      queue_.push_back(r);
    }
    ready_.notify_one();
  }
  // Returns once every run pushed has been moved.
  void Finish() {
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
    }
    ready_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    NameThisThread("gs-run-mover");
    std::unique_lock lock(mutex_);
    for (;;) {
      ready_.wait(lock, [&] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;  // done, and nothing left
      const std::size_t r = queue_.front();
      queue_.pop_front();
      lock.unlock();
      move_(r);
      lock.lock();
    }
  }

  std::function<void(std::size_t)> move_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::size_t> queue_;
  bool done_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

// The runs' reports as one: the first run's algorithm, each stage's time summed over the runs (so
// above the wall time where runs overlapped on several GPUs), and every device that served a run.
void CombineReports(const std::vector<ExecutionReport>& runs, ExecutionReport& report) {
  std::string devices;
  for (const ExecutionReport& run : runs) {
    for (const StageTime& s : run.stages) report.AddStage(s.stage, s.seconds);
    if (!run.device.empty() && devices.find(run.device) == std::string::npos) {
      devices += devices.empty() ? run.device : ", " + run.device;
    }
  }
  if (!runs.empty()) report.algorithm = runs.front().algorithm;
  if (!devices.empty()) report.device = devices;
}

// Device bytes per key of a run, above what the CUDA engine asked for on the H200 pair (2026-11-26,
// multi_gpu_test under an 8 MiB limit): a sort of 8-bit keys 6.1 bytes, of 32-bit keys at most 12, of
// 8-bit keys with int64 indices 25.5; a top-k by sort of 32-bit keys 12.9, of 8-bit keys 8.1. Keys
// narrower than 32 bits are sorted as 32-bit words, and payloads go in twice (input and output).
std::size_t SortBytesPerKey(const SortSpec& spec) {
  const std::size_t payload = spec.payload == SortPayload::kValues    ? spec.value_width
                              : spec.payload == SortPayload::kIndices ? sizeof(int64_t)
                                                                      : 0;
  return 3 * std::max<std::size_t>(ElementSize(spec.dtype), 4) + 2 * payload;
}

}  // namespace

bool SortSplitsInRuns(const SortSpec& spec) { return !spec.segmented(); }
bool TopKSplitsInRuns(const TopKSpec& spec) { return spec.rows <= 1 && !spec.by_segments(); }

std::size_t SortRunKeys(const SortSpec& spec, std::size_t memory_bytes, std::size_t max_keys) {
  if (memory_bytes == 0) return max_keys;
  return std::clamp<std::size_t>(memory_bytes / kRunMemoryShareDivisor * 3 / SortBytesPerKey(spec), 1, max_keys);
}

std::size_t TopKRunKeys(const TopKSpec& spec, std::size_t memory_bytes, std::size_t max_keys) {
  if (memory_bytes == 0) return max_keys;
  const std::size_t per_key = 2 * std::max<std::size_t>(ElementSize(spec.dtype), 4) + 12;
  // A run must also hold its k results: at least k + 1 keys, or a run would give back all it took.
  return std::clamp<std::size_t>(memory_bytes / kRunMemoryShareDivisor * 3 / per_key, std::min(spec.k + 1, max_keys),
                                 max_keys);
}

// long-function: one sort's steps (scratch, runs with their moves, merge) read best in order
absl::Status SortInRuns(const SortSpec& spec, std::span<const std::byte> keys_in, const SortBuffers& buffers,
                        bool pinned, const RunPlan& plan, const Cancellation& cancellation, ExecutionReport& report) {
  const std::size_t n = buffers.count, w = ElementSize(spec.dtype);
  const std::vector<Run> runs = CutRuns(n, plan.run_keys, plan.engines.size());
  // Merged in place, in passes through host scratch (cpu/run_merge.h), taken before any GPU work. The
  // answer's memory may be a region its owner can write at any moment; each pass reads every element
  // once and checks its splits before it merges, so such writes can change the answer, never reach
  // outside the arrays.
  const std::span<std::byte> payload_out =
      spec.payload == SortPayload::kValues    ? buffers.values_out
      : spec.payload == SortPayload::kIndices ? std::as_writable_bytes(buffers.indices_out)
                                              : std::span<std::byte>();
  std::vector<std::size_t> bounds;
  for (const Run& run : runs) bounds.push_back(run.begin);
  bounds.push_back(n);
  std::unique_ptr<cpu::RunMerge> merge;
  if (runs.size() > 1) {
    ASSIGN_OR_RETURN(merge, cpu::RunMerge::Prepare({.dtype = spec.dtype,
                                                    .descending = spec.order == SortOrder::kDescending,
                                                    .bounds = bounds,
                                                    .keys = buffers.keys,
                                                    .payload_width = n == 0 ? 0 : payload_out.size() / n,
                                                    .payload = payload_out},
                                                   plan.merge_threads));
  }
  // Each sorted run's indices are made to count from the array's start, and the run moves to the merge's
  // scratch, on one thread beside the engines' while the GPUs sort the next runs.
  RunMover mover([&](std::size_t r) {
    if (spec.payload == SortPayload::kIndices) {
      for (std::size_t i = runs[r].begin; i < runs[r].end; ++i) buffers.indices_out[i] += static_cast<int64_t>(runs[r].begin);
    }
    if (merge != nullptr) merge->RunSorted(r);
  });
  std::vector<ExecutionReport> reports;
  const absl::Status sorted = ForEachRun(runs.size(), plan, cancellation, reports,
                                         [&](std::size_t r, Backend& engine, ExecutionReport& run_report) {
    const Run run = runs[r];
    const std::size_t len = run.end - run.begin;
    SortBuffers part;
    part.count = len;
    part.keys = buffers.keys.subspan(run.begin * w, len * w);
    if (spec.payload == SortPayload::kValues) {
      part.values = buffers.values.subspan(run.begin * spec.value_width, len * spec.value_width);
      part.values_out = buffers.values_out.subspan(run.begin * spec.value_width, len * spec.value_width);
    }
    if (spec.payload == SortPayload::kIndices) part.indices_out = buffers.indices_out.subspan(run.begin, len);
    run_report.device = engine.device();
    absl::Status status = pinned ? RunSort(engine, spec, part, cancellation, run_report, Memory::kRegisteredHost,
                                           keys_in.subspan(run.begin * w, len * w))
                                 : RunSort(engine, spec, part, cancellation, run_report);
    if (status.ok() && runs.size() > 1) mover.Push(r);
    return status;
  });
  mover.Finish();
  RETURN_IF_ERROR(sorted);
  CombineReports(reports, report);
  if (merge == nullptr) return absl::OkStatus();
  const StageClock merging;
  RETURN_IF_ERROR(merge->Merge(cancellation));
  report.AddStage(Stage::kMerge, merging.Seconds());
  return absl::OkStatus();
}

// long-function: the runs' selections, then one ranking of their candidates, read best together
absl::Status TopKInRuns(const TopKSpec& spec, const TopKBuffers& buffers, bool pinned, const RunPlan& plan,
                        const Cancellation& cancellation, ExecutionReport& report) {
  const std::size_t n = buffers.count, w = ElementSize(spec.dtype);
  const std::vector<Run> runs = CutRuns(n, plan.run_keys, plan.engines.size());
  // Each run's own top-k, with positions: candidates[c], candidate c of run r at [r * k, ...).
  std::vector<std::size_t> found(runs.size(), 0);
  std::vector<std::byte> candidate_keys;
  std::vector<int64_t> candidate_indices;
  try {
    candidate_keys.resize(runs.size() * spec.k * w);
    candidate_indices.resize(runs.size() * spec.k);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("no host memory for the top-k candidates of " + std::to_string(runs.size()) +
                                        " runs of k = " + std::to_string(spec.k));
  }
  std::vector<ExecutionReport> reports;
  RETURN_IF_ERROR(ForEachRun(runs.size(), plan, cancellation, reports,
                             [&](std::size_t r, Backend& engine, ExecutionReport& run_report) {
    const Run run = runs[r];
    TopKSpec part_spec = spec;
    part_spec.k = std::min(spec.k, run.end - run.begin);
    part_spec.output = TopKOutput::kValuesAndIndices;
    part_spec.rows = 1;
    TopKBuffers part;
    part.count = run.end - run.begin;
    part.keys = buffers.keys.subspan(run.begin * w, part.count * w);
    part.values_out = std::span(candidate_keys).subspan(r * spec.k * w, part_spec.k * w);
    part.indices_out = std::span(candidate_indices).subspan(r * spec.k, part_spec.k);
    found[r] = part_spec.k;
    run_report.device = engine.device();
    return RunTopK(engine, part_spec, part, cancellation, run_report,
                   pinned ? Memory::kRegisteredHost : Memory::kMessage);
  }));
  CombineReports(reports, report);

  const StageClock merging;
  // Rank every candidate as the proto does: by key (largest first when asked), ties by position.
  struct Candidate {
    std::uint64_t rank;
    int64_t index;
    std::size_t slot;
  };
  std::vector<Candidate> candidates;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    for (std::size_t c = 0; c < found[r]; ++c) {
      const std::size_t slot = r * spec.k + c;
      candidates.push_back({cpu::RankBits(spec.dtype, &candidate_keys[slot * w], spec.largest),
                            candidate_indices[slot] + static_cast<int64_t>(runs[r].begin), slot});
    }
  }
  const std::size_t k = std::min(spec.k, candidates.size());
  const auto before = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.index < b.index;
  };
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(k), candidates.end(), before);
  for (std::size_t i = 0; i < k; ++i) {
    if (spec.wants_values()) std::memcpy(&buffers.values_out[i * w], &candidate_keys[candidates[i].slot * w], w);
    if (spec.wants_indices()) buffers.indices_out[i] = candidates[i].index;
  }
  report.AddStage(Stage::kMerge, merging.Seconds());
  return absl::OkStatus();
}

}  // namespace gpusort
