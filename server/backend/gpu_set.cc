#include "server/backend/gpu_set.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "server/backend/forwarding_parted_ingest.h"
#include "server/backend/sort_in_runs.h"
#include "server/core/dtype.h"
#include "server/core/status_macros.h"

namespace gpusort {
namespace {

// What one request weighs while it runs on a GPU, for placing the next: its bytes, plus a fixed part
// standing for a launch's and a copy's own cost, so that many small requests spread too.
constexpr int64_t kRequestFixedBytes = int64_t{1} << 20;

struct Gpu {
  int ordinal = 0;
  std::unique_ptr<Backend> engine;
  std::size_t memory_bytes = 0;
  std::string name;                  // "cuda:1", for health and metrics
  std::atomic<int64_t> load{0};      // bytes of the requests running there now (kRequestFixedBytes each)
};

// A request's weight on its GPU while it runs there.
class Charge {
 public:
  Charge(Gpu* gpu, int64_t bytes) : gpu_(gpu), bytes_(bytes) {
    if (gpu_ != nullptr) gpu_->load.fetch_add(bytes_, std::memory_order_relaxed);
  }
  ~Charge() {
    if (gpu_ != nullptr) gpu_->load.fetch_sub(bytes_, std::memory_order_relaxed);
  }
  Charge(Charge&& other) noexcept : gpu_(std::exchange(other.gpu_, nullptr)), bytes_(other.bytes_) {}
  Charge(const Charge&) = delete;
  Charge& operator=(const Charge&) = delete;
  Charge& operator=(Charge&&) = delete;

 private:
  Gpu* gpu_;
  int64_t bytes_;
};

int64_t Weight(std::size_t keys, DType dtype) {
  return static_cast<int64_t>(keys * ElementSize(dtype)) + kRequestFixedBytes;
}

// Device regions imported through the set, by address: a request on a region runs on the GPU that
// imported it. Shared with each import, which may outlive a request but not this map.
class RegionHomes {
 public:
  void Add(const std::byte* begin, std::size_t bytes, Gpu* gpu) {
    const std::lock_guard lock(mutex_);
    homes_[begin] = {begin + bytes, gpu};
  }
  void Remove(const std::byte* begin) {
    const std::lock_guard lock(mutex_);
    homes_.erase(begin);
  }
  // The GPU whose import holds `at`; nullptr when none does.
  Gpu* Find(const void* at) const {
    const auto* p = static_cast<const std::byte*>(at);
    const std::lock_guard lock(mutex_);
    auto it = homes_.upper_bound(p);
    if (it == homes_.begin()) return nullptr;
    --it;
    return p < it->second.first ? it->second.second : nullptr;
  }

 private:
  mutable std::mutex mutex_;
  std::map<const std::byte*, std::pair<const std::byte*, Gpu*>> homes_;
};

class ImportOnGpu final : public DeviceMemoryImport {
 public:
  ImportOnGpu(std::unique_ptr<DeviceMemoryImport> import, Gpu* gpu, std::shared_ptr<RegionHomes> homes)
      : import_(std::move(import)), homes_(std::move(homes)) {
    homes_->Add(import_->bytes().data(), import_->bytes().size(), gpu);
  }
  ~ImportOnGpu() override { homes_->Remove(import_->bytes().data()); }
  std::span<std::byte> bytes() const override { return import_->bytes(); }

 private:
  std::unique_ptr<DeviceMemoryImport> import_;
  std::shared_ptr<RegionHomes> homes_;
};

// An ingest on one GPU: holds that GPU's charge while it lives, and says which GPU sorted.
class IngestOnGpu final : public SortIngest {
 public:
  IngestOnGpu(std::unique_ptr<SortIngest> ingest, Gpu* gpu, Charge charge)
      : ingest_(std::move(ingest)), gpu_(gpu), charge_(std::move(charge)) {}
  absl::Status Append(std::span<const std::byte> keys) override { return ingest_->Append(keys); }
  absl::Status Sort(const Cancellation& cancellation, ExecutionReport& report) override {
    report.device = gpu_->engine->device();
    return ingest_->Sort(cancellation, report);
  }
  absl::Status Read(std::size_t begin, std::size_t end, std::byte* keys, int64_t* indices) override {
    return ingest_->Read(begin, end, keys, indices);
  }

 private:
  std::unique_ptr<SortIngest> ingest_;
  Gpu* gpu_;
  Charge charge_;
};

class PartedIngestOnGpu final : public ForwardingPartedSortIngest {
 public:
  PartedIngestOnGpu(std::unique_ptr<PartedSortIngest> ingest, Gpu* gpu, Charge charge)
      : ForwardingPartedSortIngest(std::move(ingest)), gpu_(gpu), charge_(std::move(charge)) {}
  absl::Status Sort(const Cancellation& cancellation, ExecutionReport& report) override {
    report.device = gpu_->engine->device();
    return ForwardingPartedSortIngest::Sort(cancellation, report);
  }

 private:
  Gpu* gpu_;
  Charge charge_;
};

std::string OrdinalName(int ordinal) { return "cuda:" + std::to_string(ordinal); }

class GpuSet final : public Backend {
 public:
  GpuSet(std::vector<GpuSetMember> members, GpuSetOptions options) : options_(std::move(options)) {
    for (GpuSetMember& m : members) {
      auto gpu = std::make_unique<Gpu>();
      gpu->ordinal = m.ordinal;
      gpu->engine = std::move(m.engine);
      gpu->memory_bytes = m.memory_bytes;
      gpu->name = OrdinalName(m.ordinal);
      gpus_.push_back(std::move(gpu));
    }
  }

  BackendKind kind() const override { return first().kind(); }
  // One GPU: its engine's own name; several: each of them.
  std::string device() const override {
    std::string all;
    for (const auto& gpu : gpus_) all += (all.empty() ? "" : ", ") + gpu->engine->device();
    return all;
  }
  std::vector<Algorithm> sort_algorithms() const override { return first().sort_algorithms(); }
  std::vector<Algorithm> topk_algorithms() const override { return first().topk_algorithms(); }
  std::vector<MemoryReading> memory() const override {
    std::vector<MemoryReading> all;
    for (const auto& gpu : gpus_) {
      std::vector<MemoryReading> m = gpu->engine->memory();
      all.insert(all.end(), m.begin(), m.end());
    }
    return all;
  }

  // Serving while one GPU serves. With none left: the one GPU's own status, or every GPU's reason.
  absl::Status Healthy() const override {
    if (gpus_.size() == 1) return first().Healthy();
    std::string reasons;
    for (const auto& gpu : gpus_) {
      const absl::Status status = gpu->engine->Healthy();
      if (status.ok()) return status;
      reasons += (reasons.empty() ? "" : "; ") + gpu->name + ": " + std::string(status.message());
    }
    return absl::UnavailableError("every GPU failed (" + reasons + ")");
  }
  std::vector<DeviceServing> devices() const override {
    std::vector<DeviceServing> all;
    for (const auto& gpu : gpus_) all.push_back({gpu->name, gpu->engine->Healthy()});
    return all;
  }
  int devices_lost() const override {
    int lost = 0;
    for (const auto& gpu : gpus_) lost += gpu->engine->devices_lost();
    return lost;
  }

  absl::Status CheckSortLimits(const SortSpec& spec, std::size_t count) const override {
    const std::size_t run = SortRun(spec);
    if (SortSplitsInRuns(spec) && count > run) return first().CheckSortLimits(spec, run);
    return first().CheckSortLimits(spec, count);
  }
  absl::Status CheckTopKLimits(const TopKSpec& spec, std::size_t count) const override {
    const std::size_t run = TopKRun(spec);
    if (TopKSplitsInRuns(spec) && count > run) return first().CheckTopKLimits(spec, run);
    return first().CheckTopKLimits(spec, count);
  }

  // A device region runs on the GPU its memory lives on; an array one pass cannot take, in runs
  // (SortLarge, TopKInRuns); anything else on the GPU Place picks. Charged there while it runs.
  absl::Status Run(const Job& job) override {
    const bool pinned = job.memory == Memory::kRegisteredHost;
    if (job.memory != Memory::kDeviceRegion) {
      if (const auto* work = std::get_if<SortWork>(&job.work)) {
        if (SortSplitsInRuns(work->spec) && InRuns(work->buffers.count, SortRun(work->spec))) {
          return SortLarge(work->spec, work->source(), work->buffers, pinned, job.cancellation, job.report);
        }
      } else if (const auto* work = std::get_if<TopKWork>(&job.work);
                 TopKSplitsInRuns(work->spec) && InRuns(work->buffers.count, TopKRun(work->spec))) {
        return TopKInRuns(work->spec, work->buffers, pinned, Plan(TopKRun(work->spec)), job.cancellation, job.report);
      }
    }
    ASSIGN_OR_RETURN(Gpu* const gpu, job.memory == Memory::kDeviceRegion ? RegionGpu(job) : Place());
    const Charge charge(gpu, Weight(JobKeys(job), JobDtype(job)));
    job.report.device = gpu->engine->device();
    return gpu->engine->Run(job);
  }

  // One registration serves every GPU: cudaHostRegister's memory is portable to every context of the
  // process where addressing is unified (every 64-bit Linux system), and a second registration of the
  // same memory would be refused.
  absl::StatusOr<std::unique_ptr<HostMemoryPin>> PinHostMemory(std::span<std::byte> memory) override {
    ASSIGN_OR_RETURN(Gpu* const gpu, Place());
    return gpu->engine->PinHostMemory(memory);
  }

  // A region is imported for the GPU its memory lives on, where that GPU serves; else for the first
  // GPU that serves (which maps it over peer access, or says it cannot reach it).
  absl::StatusOr<std::unique_ptr<DeviceMemoryImport>> ImportDeviceMemory(int fd, std::size_t bytes) override {
    Gpu* gpu = nullptr;
    if (options_.home_of_region) {
      const absl::StatusOr<int> home = options_.home_of_region(fd);
      if (home.ok()) {
        for (const auto& g : gpus_) {
          if (g->ordinal == *home && g->engine->Healthy().ok()) gpu = g.get();
        }
      }
    }
    if (gpu == nullptr) {
      ASSIGN_OR_RETURN(gpu, Place());
    }
    ASSIGN_OR_RETURN(std::unique_ptr<DeviceMemoryImport> import, gpu->engine->ImportDeviceMemory(fd, bytes));
    return std::unique_ptr<DeviceMemoryImport>(new ImportOnGpu(std::move(import), gpu, homes_));
  }
  // A stream's length is not known when it starts: it goes to one GPU as it arrives where the longest
  // stream the server takes fits one; else nullptr, and the stream is collected on the host and sorted
  // through Sort (in runs when it must be).
  std::unique_ptr<SortIngest> StartSortIngest(const SortSpec& spec) override {
    if (SortSplitsInRuns(spec) && options_.max_request_bytes / ElementSize(spec.dtype) > SortRun(spec)) return nullptr;
    absl::StatusOr<Gpu*> gpu = Place();
    if (!gpu.ok()) return nullptr;  // Sort, with the whole array, then answers why
    std::unique_ptr<SortIngest> ingest = (*gpu)->engine->StartSortIngest(spec);
    if (ingest == nullptr) return nullptr;
    return std::make_unique<IngestOnGpu>(std::move(ingest), *gpu, Charge(*gpu, kRequestFixedBytes));
  }
  // A parted Sort too large for one GPU gathers on the host and is sorted in runs (Sort).
  absl::StatusOr<std::unique_ptr<PartedSortIngest>> StartPartedSortIngest(const SortSpec& spec,
                                                                          std::size_t total_keys) override {
    if (SortSplitsInRuns(spec) && InRuns(total_keys, SortRun(spec))) {
      return Backend::StartPartedSortIngest(spec, total_keys);
    }
    ASSIGN_OR_RETURN(Gpu* const gpu, Place());
    ASSIGN_OR_RETURN(std::unique_ptr<PartedSortIngest> ingest, gpu->engine->StartPartedSortIngest(spec, total_keys));
    return std::unique_ptr<PartedSortIngest>(
        new PartedIngestOnGpu(std::move(ingest), gpu, Charge(gpu, Weight(total_keys, spec.dtype))));
  }

 private:
  const Backend& first() const { return *gpus_.front()->engine; }

  // An array served in runs (one pass on a GPU cannot take it, or --split-from-keys splits it): first
  // sorted in runs on every serving GPU and merged there (options_.merge_on_devices: runs kept in the
  // GPUs' memory, the keys crossing PCIe once each way, or in pinned host memory where they do not fit).
  // Where that declines (values payloads, too little memory), in runs merged on the host (sort_in_runs.h).
  absl::Status SortLarge(const SortSpec& spec, std::span<const std::byte> keys_in, const SortBuffers& buffers,
                         bool pinned, const Cancellation& cancellation, ExecutionReport& report) {
    const absl::StatusOr<Gpu*> gpu = Place();
    if (gpu.ok() && options_.merge_on_devices) {  // with no GPU serving, SortInRuns says why
      const Charge charge(*gpu, Weight(buffers.count, spec.dtype));
      std::vector<int> ordinals = {(*gpu)->ordinal};
      for (const auto& other : gpus_) {
        if (other.get() != *gpu && other->engine->Healthy().ok()) ordinals.push_back(other->ordinal);
      }
      ExecutionReport merged;
      ASSIGN_OR_RETURN(const bool done,
                       options_.merge_on_devices(ordinals, SortWork{spec, buffers, keys_in}, options_.max_keys_per_run,
                                                 cancellation, merged));
      if (done) {
        for (const StageTime& s : merged.stages) report.AddStage(s.stage, s.seconds);
        report.algorithm = merged.algorithm;
        report.device = merged.device;
        return absl::OkStatus();
      }
    }
    return SortInRuns(spec, keys_in, buffers, pinned, Plan(SortRun(spec)), cancellation, report);
  }

  // The most keys of one run: what the smallest GPU's memory takes, within the GPU paths' limit.
  std::size_t SortRun(const SortSpec& spec) const {
    std::size_t run = options_.max_keys_per_run;
    for (const auto& gpu : gpus_) run = std::min(run, SortRunKeys(spec, gpu->memory_bytes, options_.max_keys_per_run));
    return run;
  }
  std::size_t TopKRun(const TopKSpec& spec) const {
    std::size_t run = options_.max_keys_per_run;
    for (const auto& gpu : gpus_) run = std::min(run, TopKRunKeys(spec, gpu->memory_bytes, options_.max_keys_per_run));
    return run;
  }

  // Whether `count` keys are served in runs: more than one GPU takes, or enough to split across GPUs.
  bool InRuns(std::size_t count, std::size_t run_keys) const {
    if (count > run_keys) return true;
    return options_.split_from_keys != 0 && count >= options_.split_from_keys && Serving().size() > 1;
  }

  std::vector<Backend*> Serving() const {
    std::vector<Backend*> serving;
    for (const auto& gpu : gpus_) {
      if (gpu->engine->Healthy().ok()) serving.push_back(gpu->engine.get());
    }
    return serving;
  }

  RunPlan Plan(std::size_t run_keys) const {
    RunPlan plan{.engines = Serving(), .run_keys = run_keys, .merge_threads = options_.merge_threads};
    if (plan.engines.empty()) plan.engines.push_back(gpus_.front()->engine.get());  // which then says why
    return plan;
  }

  // The serving GPU with the least work in flight; ties go round, so that an idle set spreads too.
  absl::StatusOr<Gpu*> Place() {
    const std::size_t start = next_.fetch_add(1, std::memory_order_relaxed);
    Gpu* best = nullptr;
    int64_t best_load = 0;
    for (std::size_t i = 0; i < gpus_.size(); ++i) {
      Gpu* const gpu = gpus_[(start + i) % gpus_.size()].get();
      if (gpus_.size() > 1 && !gpu->engine->Healthy().ok()) continue;
      const int64_t load = gpu->load.load(std::memory_order_relaxed);
      if (best == nullptr || load < best_load) {
        best = gpu;
        best_load = load;
      }
    }
    if (best == nullptr) return Healthy();  // every GPU lost: why, as health says it
    return best;
  }

  // The GPU of the device regions a request's arrays lie in (null or unknown addresses aside): one
  // GPU, or FAILED_PRECONDITION naming both.
  // The GPU a job in device regions runs on: where its arrays live.
  absl::StatusOr<Gpu*> RegionGpu(const Job& job) const {
    if (const auto* work = std::get_if<SortWork>(&job.work)) {
      const SortBuffers& b = work->buffers;
      return RegionGpu({work->keys_in.data(), b.keys.data(), b.values_out.data(), b.indices_out.data()});
    }
    const TopKBuffers& b = std::get<TopKWork>(job.work).buffers;
    return RegionGpu({b.keys.data(), b.values_out.data(), b.indices_out.data()});
  }
  absl::StatusOr<Gpu*> RegionGpu(std::initializer_list<const void*> arrays) const {
    Gpu* home = nullptr;
    for (const void* at : arrays) {
      if (at == nullptr) continue;
      Gpu* const gpu = homes_->Find(at);
      if (gpu == nullptr) continue;
      if (home != nullptr && gpu != home) {
        return absl::FailedPreconditionError("the request's device regions live on two GPUs (" + home->name + " and " +
                                             gpu->name + "): keys and results must be on one GPU");
      }
      home = gpu;
    }
    if (home == nullptr) home = gpus_.front().get();
    return home;
  }

  std::vector<std::unique_ptr<Gpu>> gpus_;
  const GpuSetOptions options_;
  std::atomic<std::size_t> next_{0};
  std::shared_ptr<RegionHomes> homes_ = std::make_shared<RegionHomes>();
};

}  // namespace

std::unique_ptr<Backend> MakeGpuSet(std::vector<GpuSetMember> members, GpuSetOptions options) {
  return std::make_unique<GpuSet>(std::move(members), std::move(options));
}

}  // namespace gpusort
