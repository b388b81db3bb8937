#include "server/backend/auto_router.h"
#include "server/backend/forwarding_parted_ingest.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/backend/auto_policy.h"
#include "server/core/dtype.h"
#include "server/core/status_macros.h"

namespace gpusort {
namespace {

// What served the request, in its report: the service answers with it (ExecutionInfo.backend, device).
void Stamp(const Backend& engine, ExecutionReport& report) {
  report.backend = engine.kind();
  report.device = engine.device();
}

// The requests an engine has in flight under load-aware AUTO: counted while a Charge lives. Every way
// work reaches an engine through the router charges it (Sort, TopK, their pinned and device-memory
// forms, streams and parted sorts), so that a small sort routed by the count sees the large
// streamed ones running on the GPU as well.
class InFlight {
 public:
  int requests() const { return requests_.load(std::memory_order_relaxed); }

  class Charge {
   public:
    // `in_flight` nullptr: nothing counted (routing other than load-aware).
    explicit Charge(InFlight* in_flight, int requests = 1) : in_flight_(in_flight), requests_(requests) {
      if (in_flight_ != nullptr) in_flight_->requests_.fetch_add(requests_, std::memory_order_relaxed);
    }
    ~Charge() {
      if (in_flight_ != nullptr) in_flight_->requests_.fetch_sub(requests_, std::memory_order_relaxed);
    }
    Charge(const Charge&) = delete;
    Charge& operator=(const Charge&) = delete;

   private:
    InFlight* in_flight_;
    int requests_;
  };

 private:
  std::atomic<int> requests_{0};
};

// The streams AUTO or RADIX may send to the GPU: pieces wait on the host until they hold as many keys
// as AUTO takes to the GPU (kAutoSortCpuBelowKeys); from then on they go to the GPU engine's ingest as
// they come, so that a long stream crosses PCIe while the rest is still on the wire and a short one
// never touches the device. A stream that ends short is sorted where the router sends a Sort of its
// size (AUTO: the CPU; RADIX: the GPU).
class RoutedSortIngest final : public SortIngest {
 public:
  // `gpu_in_flight`: charged while the keys sort on the GPU (nullptr: not counted).
  RoutedSortIngest(Backend& router, Backend& gpu, InFlight* gpu_in_flight, const SortSpec& spec,
                   std::size_t gpu_from_keys)
      : router_(router),
        gpu_(gpu),
        gpu_in_flight_(gpu_in_flight),
        spec_(spec),
        key_bytes_(ElementSize(spec.dtype)),
        gpu_from_keys_(gpu_from_keys) {}

  absl::Status Append(std::span<const std::byte> keys) override {
    if (on_gpu_ != nullptr) return on_gpu_->Append(keys);
    held_.append(reinterpret_cast<const char*>(keys.data()), keys.size());
    if (held_.size() < gpu_from_keys_ * key_bytes_ || gpu_declined_) return absl::OkStatus();
    on_gpu_ = gpu_.StartSortIngest(spec_);
    if (on_gpu_ == nullptr) {  // the engine takes whole arrays only: keep collecting
      gpu_declined_ = true;
      return absl::OkStatus();
    }
    std::string held;
    held.swap(held_);
    return on_gpu_->Append(std::as_bytes(std::span(held.data(), held.size())));
  }

  absl::Status Sort(const Cancellation& cancellation, ExecutionReport& report) override {
    if (on_gpu_ != nullptr) {
      const InFlight::Charge charge(gpu_in_flight_);
      Stamp(gpu_, report);
      return on_gpu_->Sort(cancellation, report);
    }
    const std::size_t n = held_.size() / key_bytes_;
    SortBuffers buffers;
    buffers.count = n;
    buffers.keys = std::as_writable_bytes(std::span(held_.data(), held_.size()));
    if (spec_.payload == SortPayload::kIndices) {
      held_indices_.resize(n);
      buffers.indices_out = std::span(held_indices_);
    }
    return RunSort(router_, spec_, buffers, cancellation, report);  // which stamps the engine it picks
  }

  absl::Status Read(std::size_t begin, std::size_t end, std::byte* keys, int64_t* indices) override {
    if (on_gpu_ != nullptr) return on_gpu_->Read(begin, end, keys, indices);
    if (begin >= end) return absl::OkStatus();
    std::copy_n(reinterpret_cast<const std::byte*>(held_.data()) + begin * key_bytes_, (end - begin) * key_bytes_,
                keys);
    if (indices != nullptr) std::copy(held_indices_.begin() + begin, held_indices_.begin() + end, indices);
    return absl::OkStatus();
  }

 private:
  Backend& router_;
  Backend& gpu_;
  InFlight* const gpu_in_flight_;
  const SortSpec spec_;
  const std::size_t key_bytes_;
  const std::size_t gpu_from_keys_;
  std::unique_ptr<SortIngest> on_gpu_;  // once the keys reached AUTO's GPU threshold
  bool gpu_declined_ = false;
  std::string held_;                    // until then
  std::vector<int64_t> held_indices_;
};

// A parted sort on the GPU engine, its Sort charged to the GPU's requests in flight.
class ChargedPartedSortIngest final : public ForwardingPartedSortIngest {
 public:
  ChargedPartedSortIngest(std::unique_ptr<PartedSortIngest> ingest, InFlight* in_flight)
      : ForwardingPartedSortIngest(std::move(ingest)), in_flight_(in_flight) {}
  absl::Status Sort(const Cancellation& cancellation, ExecutionReport& report) override {
    const InFlight::Charge charge(in_flight_);
    return ForwardingPartedSortIngest::Sort(cancellation, report);
  }

 private:
  InFlight* in_flight_;
};

std::vector<Algorithm> WithCpu(std::vector<Algorithm> list) {
  list.push_back(Algorithm::kCpu);
  return list;
}

bool Listed(const std::vector<Algorithm>& list, Algorithm a) {
  return std::find(list.begin(), list.end(), a) != list.end();
}

class AutoRouter final : public Backend {
 public:
  AutoRouter(std::unique_ptr<Backend> cpu, std::unique_ptr<Backend> gpu, AutoRouting routing)
      : cpu_(std::move(cpu)), gpu_(std::move(gpu)), routing_(routing) {}

  // The server serves from the GPU engine; the CPU engine helps it with small work.
  BackendKind kind() const override { return gpu_->kind(); }
  std::string device() const override { return gpu_->device(); }
  std::vector<Algorithm> sort_algorithms() const override { return WithCpu(gpu_->sort_algorithms()); }
  std::vector<Algorithm> topk_algorithms() const override { return WithCpu(gpu_->topk_algorithms()); }
  // AUTO's small work is the CPU's, unless every AUTO call goes to the GPU.
  bool SmallCallsAreCheap() const override { return routing_ != AutoRouting::kGpu && cpu_->SmallCallsAreCheap(); }
  void WatchCallsInFlight(std::shared_ptr<const std::atomic<int>> calls) override {
    calls_in_flight_ = std::move(calls);
  }
  std::vector<MemoryReading> memory() const override { return gpu_->memory(); }
  absl::Status Healthy() const override { return gpu_->Healthy(); }
  std::vector<DeviceServing> devices() const override { return gpu_->devices(); }
  int devices_lost() const override { return gpu_->devices_lost(); }

  absl::Status CheckSortLimits(const SortSpec& spec, std::size_t count) const override {
    ASSIGN_OR_RETURN(Backend* const engine, ForSort(spec, count));
    return engine->CheckSortLimits(spec, count);
  }
  absl::Status CheckTopKLimits(const TopKSpec& spec, std::size_t count) const override {
    ASSIGN_OR_RETURN(Backend* const engine, ForTopK(spec, count));
    return engine->CheckTopKLimits(spec, count);
  }

  absl::Status Run(const Job& job) override {
    ASSIGN_OR_RETURN(const Placed placed, Place(job));
    const InFlight::Charge charge(placed.in_flight);
    Stamp(*placed.engine, job.report);
    return placed.engine->Run(job);
  }

  absl::StatusOr<std::unique_ptr<HostMemoryPin>> PinHostMemory(std::span<std::byte> memory) override {
    return gpu_->PinHostMemory(memory);  // the CPU engine needs none
  }

  // Device memory is the GPU engine's alone, whatever the size: the CPU cannot read it.
  absl::StatusOr<std::unique_ptr<DeviceMemoryImport>> ImportDeviceMemory(int fd, std::size_t bytes) override {
    return gpu_->ImportDeviceMemory(fd, bytes);
  }

  // Values, the CPU by name and the comparison sorts by name take whole arrays (collected, then Sort).
  std::unique_ptr<SortIngest> StartSortIngest(const SortSpec& spec) override {
    if (spec.payload == SortPayload::kValues || spec.segmented()) return nullptr;
    if (spec.algorithm != Algorithm::kAuto && spec.algorithm != Algorithm::kRadix) return nullptr;
    return std::make_unique<RoutedSortIngest>(*this, *gpu_, InFlightOf(gpu_.get()), spec, GpuFromKeys());
  }

  // As StartSortIngest; a whole that AUTO would leave on the CPU gathers on the host and is sorted
  // through Sort, like a named algorithm other than RADIX.
  absl::StatusOr<std::unique_ptr<PartedSortIngest>> StartPartedSortIngest(const SortSpec& spec,
                                                                          std::size_t total_keys) override {
    if (spec.payload == SortPayload::kValues || spec.segmented() || total_keys < GpuFromKeys() ||
        (spec.algorithm != Algorithm::kAuto && spec.algorithm != Algorithm::kRadix)) {
      return Backend::StartPartedSortIngest(spec, total_keys);
    }
    ASSIGN_OR_RETURN(std::unique_ptr<PartedSortIngest> ingest, gpu_->StartPartedSortIngest(spec, total_keys));
    InFlight* const in_flight = InFlightOf(gpu_.get());
    if (in_flight == nullptr) return ingest;
    return std::unique_ptr<PartedSortIngest>(new ChargedPartedSortIngest(std::move(ingest), in_flight));
  }

 private:
  // An engine for one request, and what it is charged while it runs there (load-aware AUTO only).
  struct Placed {
    Backend* engine = nullptr;
    InFlight* in_flight = nullptr;  // counted there while it runs (load-aware AUTO only)
  };

  // A stream or a parted sort goes to the GPU engine from this many keys (collected on the host until
  // then); a whole array of fewer is sorted where Sort sends it.
  std::size_t GpuFromKeys() const { return routing_ == AutoRouting::kGpu ? 1 : kAutoSortCpuBelowKeys; }

  // The size rule's choice, or the GPU for every AUTO call under --auto-routing gpu. Limits are checked
  // by it; load-aware AUTO may then run a request on the other engine (Place*).
  AutoChoice SortRule(const SortSpec& spec, std::size_t count) const {
    return routing_ == AutoRouting::kGpu ? AutoChoice::kGpuRadix : ChooseSort(spec, count);
  }
  AutoChoice TopKRule(const TopKSpec& spec, std::size_t count, bool pinned = false) const {
    return routing_ == AutoRouting::kGpu ? AutoChoice::kGpuRadix : ChooseTopK(spec, count, pinned);
  }
  absl::StatusOr<Backend*> ForSort(const SortSpec& spec, std::size_t count) const {
    return Route("Sort", spec.algorithm, SortRule(spec, count), &Backend::sort_algorithms);
  }
  absl::StatusOr<Backend*> ForTopK(const TopKSpec& spec, std::size_t count, bool pinned = false) const {
    return Route("TopK", spec.algorithm, TopKRule(spec, count, pinned), &Backend::topk_algorithms);
  }

  // A device region goes to the GPU engine, whatever its size; anything else where the size rule (and
  // load-aware AUTO) puts it, registered host memory as `pinned`.
  absl::StatusOr<Placed> Place(const Job& job) {
    if (job.memory == Memory::kDeviceRegion) return Counted(gpu_.get());
    const bool pinned = job.memory == Memory::kRegisteredHost;
    if (const auto* work = std::get_if<SortWork>(&job.work)) return PlaceSort(work->spec, work->buffers.count, pinned);
    const TopKWork& work = std::get<TopKWork>(job.work);
    return PlaceTopK(work.spec, work.buffers.count, pinned);
  }

  absl::StatusOr<Placed> PlaceSort(const SortSpec& spec, std::size_t count, bool pinned) {
    ASSIGN_OR_RETURN(Backend* engine, ForSort(spec, count));
    if (routing_ != AutoRouting::kLoad) return Placed{engine};
    // Only AUTO of ordinary memory moves (SortGpuFromKeysUnderLoad), and only to an engine it fits:
    // rows, segments and registered memory keep the size rule's engine.
    if (!pinned && spec.algorithm == Algorithm::kAuto && !spec.segmented()) {
      const int others = OthersInFlight();
      Backend* const chosen = count >= SortGpuFromKeysUnderLoad(others) ? gpu_.get() : cpu_.get();
      if (chosen == engine || chosen->CheckSortLimits(spec, count).ok()) engine = chosen;
    }
    return Counted(engine);
  }

  absl::StatusOr<Placed> PlaceTopK(const TopKSpec& spec, std::size_t count, bool pinned) {
    ASSIGN_OR_RETURN(Backend* engine, ForTopK(spec, count, pinned));
    // Limits were checked (CheckTopKLimits) for where the keys' transport is not known: the unpinned
    // rule's engine. A pinned request the rule moves elsewhere stays there only within that engine's.
    if (pinned) {
      ASSIGN_OR_RETURN(Backend* const checked, ForTopK(spec, count));
      if (engine != checked && !engine->CheckTopKLimits(spec, count).ok()) engine = checked;
    }
    return Counted(engine);
  }

  // The requests in flight beside this one, for kAutoSortLoadSteps: the server's admitted calls other
  // than this one, which include those being validated, queued or answered (auto_policy.h says how many
  // of a load's calls hold tickets), or what the engines hold if that is more (a SortOnSockets job's sort
  // outlives its call's ticket; a router without a server has only that).
  int OthersInFlight() const {
    const int in_engines = cpu_in_flight_.requests() + gpu_in_flight_.requests();
    if (calls_in_flight_ == nullptr) return in_engines;
    return std::max(in_engines, calls_in_flight_->load(std::memory_order_relaxed) - 1);
  }

  // `engine`, with its requests in flight counted while the request runs (load-aware AUTO).
  Placed Counted(Backend* engine) { return Placed{engine, InFlightOf(engine)}; }

  // Where `engine`'s requests are counted under load-aware AUTO; nullptr under the other routings.
  InFlight* InFlightOf(const Backend* engine) {
    if (routing_ != AutoRouting::kLoad) return nullptr;
    return engine == cpu_.get() ? &cpu_in_flight_ : &gpu_in_flight_;
  }

  // The engine for a request: the one the named algorithm belongs to, or AUTO's choice (auto_policy.h);
  // UNIMPLEMENTED, with the router's list, for an algorithm neither has. The GPU engine's list is built
  // only for a named algorithm: AUTO, most requests, routes without allocating.
  absl::StatusOr<Backend*> Route(std::string_view method, Algorithm asked, AutoChoice auto_choice,
                                 std::vector<Algorithm> (Backend::*gpu_list_of)() const) const {
    if (asked == Algorithm::kCpu) return cpu_.get();
    if (asked == Algorithm::kAuto) return auto_choice == AutoChoice::kCpu ? cpu_.get() : gpu_.get();
    const std::vector<Algorithm> gpu_list = (gpu_.get()->*gpu_list_of)();
    if (!Listed(gpu_list, asked)) return AlgorithmUnavailable(method, asked, WithCpu(gpu_list), BackendKindName(kind()));
    return gpu_.get();
  }

  std::unique_ptr<Backend> cpu_;
  std::unique_ptr<Backend> gpu_;
  const AutoRouting routing_;
  InFlight cpu_in_flight_, gpu_in_flight_;  // load-aware AUTO's count of each engine's requests
  // The server's admitted calls (WatchCallsInFlight), this one among them; nullptr until handed over.
  // Set once while the server starts, before any call.
  std::shared_ptr<const std::atomic<int>> calls_in_flight_;
};

}  // namespace

std::unique_ptr<Backend> MakeAutoRouter(std::unique_ptr<Backend> cpu, std::unique_ptr<Backend> gpu,
                                        AutoRouting routing) {
  return std::make_unique<AutoRouter>(std::move(cpu), std::move(gpu), routing);
}

}  // namespace gpusort
