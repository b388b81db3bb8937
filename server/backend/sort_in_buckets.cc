#include "server/backend/sort_in_buckets.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "server/backend/cpu/bucket_partition.h"
#include "server/backend/cpu/parallel.h"
#include "server/core/dtype.h"
#include "server/core/scratch.h"
#include "server/core/status_macros.h"
#include "server/core/thread_name.h"

namespace gpusort {
namespace {

// Buckets are aimed at this share of a run, so that the sample's error (256 samples a bucket: a few
// percent) leaves nearly every one small enough for one run; one that is not is sorted in runs.
constexpr std::size_t kBucketShareOfRun = 2;

struct Bucket {
  std::size_t begin = 0, end = 0;
  bool equal_keys = false;  // every key the same: sorted already
  std::size_t size() const { return end - begin; }
};

// Copies buckets from the scratch back to their final places, in order, on its own thread (each copy
// spread over the cores), ahead of the engines that sort them there: the copies overlap the GPUs' work.
class BucketCopier {
 public:
  BucketCopier(const std::vector<Bucket>& buckets, const std::byte* from, std::byte* to, std::size_t width,
               int threads)
      : buckets_(buckets), from_(from), to_(to), width_(width), threads_(threads), thread_([this] { Loop(); }) {}
  ~BucketCopier() { Stop(); }
  BucketCopier(const BucketCopier&) = delete;
  BucketCopier& operator=(const BucketCopier&) = delete;

  // Waits until bucket b is in place; false once stopped before it.
  bool WaitFor(std::size_t b) {
    std::unique_lock lock(mutex_);
    copied_cv_.wait(lock, [&] { return copied_ > b || stop_; });
    return copied_ > b;
  }
  void Stop() {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    copied_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    NameThisThread("gs-bucket-copy");
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      {
        const std::lock_guard lock(mutex_);
        if (stop_) return;
      }
      const Bucket& bucket = buckets_[b];
      cpu::ParallelCopy(to_ + bucket.begin * width_, from_ + bucket.begin * width_, bucket.size() * width_, threads_);
      {
        const std::lock_guard lock(mutex_);
        copied_ = b + 1;
      }
      copied_cv_.notify_all();
    }
  }

  const std::vector<Bucket>& buckets_;
  const std::byte* from_;
  std::byte* to_;
  const std::size_t width_;
  const int threads_;
  std::mutex mutex_;
  std::condition_variable copied_cv_;
  std::size_t copied_ = 0;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

void AddRunReport(const ExecutionReport& run, ExecutionReport& report) {
  for (const StageTime& s : run.stages) report.AddStage(s.stage, s.seconds);
  if (report.algorithm == Algorithm::kAuto) report.algorithm = run.algorithm;
  if (!run.device.empty() && report.device.find(run.device) == std::string::npos) {
    report.device += report.device.empty() ? run.device : ", " + run.device;
  }
}

}  // namespace

bool SortSplitsInBuckets(const SortSpec& spec) {
  return spec.payload == SortPayload::kNone && !spec.segmented() && spec.rows <= 1;
}

// long-function: one sort's steps (splitters, partition, the buckets on the engines, the misjudged ones)
absl::Status SortInBuckets(const SortSpec& spec, std::span<const std::byte> keys_in, const SortBuffers& buffers,
                           bool pinned, const RunPlan& plan, const Cancellation& cancellation, ExecutionReport& report) {
  if (plan.engines.empty()) return absl::FailedPreconditionError("no engine to sort the buckets on");
  const std::size_t n = buffers.count, w = ElementSize(spec.dtype);
  const std::span<const std::byte> in = pinned && !keys_in.empty() ? keys_in : std::span<const std::byte>(buffers.keys);
  const std::size_t engines = std::max<std::size_t>(plan.engines.size(), 1);
  const std::size_t target = std::max<std::size_t>(plan.run_keys / kBucketShareOfRun, 1);
  const std::size_t range_buckets = std::max<std::size_t>((n + target - 1) / target, 2);
  const std::size_t aimed = (range_buckets + engines - 1) / engines * engines;
  ScratchArray<std::byte> scratch;
  try {
    scratch = MakeScratch<std::byte>(n * w);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("no host memory to cut " + std::to_string(n) + " keys into buckets");
  }
  // (Its time is no stage of the report yet: a stage is named in sort.proto once a request can meet it.)
  const cpu::BucketPlan split =
      cpu::SampleSplitters(spec.dtype, spec.order == SortOrder::kDescending, in, n, aimed);
  const std::vector<std::size_t> bounds =
      cpu::PartitionByBuckets(split, in, std::span(scratch.get(), n * w), n, plan.merge_threads);
  RETURN_IF_ERROR(cancellation.Check());

  std::vector<Bucket> buckets;
  for (std::size_t b = 0; b + 1 < bounds.size(); ++b) {
    if (bounds[b + 1] > bounds[b]) {
      buckets.push_back({bounds[b], bounds[b + 1], cpu::BucketPlan::HoldsEqualKeys(b)});
    }
  }
  // The buckets to sort go to the engines in turn (bucket j of them to engine j % engines), as runs do:
  // each GPU takes an equal share, in order, each waiting only for its next bucket's copy.
  std::vector<std::size_t> to_sort, too_large;  // too large: the sample misjudged them past one run
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    if (buckets[b].equal_keys || buckets[b].size() < 2) continue;
    (buckets[b].size() > plan.run_keys ? too_large : to_sort).push_back(b);
  }
  BucketCopier copier(buckets, scratch.get(), buffers.keys.data(), w, plan.merge_threads);
  std::vector<ExecutionReport> reports(buckets.size());
  std::mutex mutex;
  absl::Status first_error;
  std::atomic<bool> failed{false};
  auto engine_loop = [&](std::size_t e) {
    Backend& engine = *plan.engines[e];
    for (std::size_t j = e; j < to_sort.size() && !failed.load(); j += engines) {
      const Bucket& bucket = buckets[to_sort[j]];
      absl::Status status = copier.WaitFor(to_sort[j]) ? cancellation.Check() : absl::CancelledError("stopped");
      if (status.ok()) {
        SortBuffers part;
        part.count = bucket.size();
        part.keys = buffers.keys.subspan(bucket.begin * w, bucket.size() * w);
        ExecutionReport& run_report = reports[to_sort[j]];
        run_report.device = engine.device();
        status = pinned ? RunSort(engine, spec, part, cancellation, run_report, Memory::kRegisteredHost, part.keys)
                        : RunSort(engine, spec, part, cancellation, run_report);
      }
      if (!status.ok()) {
        const std::lock_guard lock(mutex);
        if (first_error.ok()) first_error = std::move(status);
        failed.store(true);
      }
    }
  };
  {
    std::vector<std::thread> threads;
    for (std::size_t e = 1; e < std::min(engines, to_sort.size()); ++e) threads.emplace_back(engine_loop, e);
    engine_loop(0);
    for (std::thread& t : threads) t.join();
  }
  // Every bucket in place before the misjudged ones are sorted there, and before the answer is read.
  if (first_error.ok() && !buckets.empty() && !copier.WaitFor(buckets.size() - 1)) {
    first_error = absl::CancelledError("the buckets' copies stopped");
  }
  copier.Stop();
  RETURN_IF_ERROR(first_error);
  for (const ExecutionReport& run : reports) AddRunReport(run, report);
  for (std::size_t b : too_large) {
    const Bucket& bucket = buckets[b];
    SortBuffers part;
    part.count = bucket.size();
    part.keys = buffers.keys.subspan(bucket.begin * w, bucket.size() * w);
    RETURN_IF_ERROR(SortInRuns(spec, pinned ? std::span<const std::byte>(part.keys) : std::span<const std::byte>(),
                               part, pinned, plan, cancellation, report));
  }
  return absl::OkStatus();
}

}  // namespace gpusort
