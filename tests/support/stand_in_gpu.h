// A stand-in for one GPU's engine, for the tests of the set of GPUs (server/backend/gpu_set.h) on
// machines without a GPU: the CPU engine under a GPU's name ("cuda:N stand-in"), which
//  - refuses a request of more keys than its "memory" takes (RESOURCE_EXHAUSTED), as a GPU would, so
//    that a test sees the set cut runs that fit;
//  - can be failed for good (`State::lost`), as a sticky CUDA error loses a GPU: Healthy() is then
//    UNAVAILABLE and every call fails; or fail at its next call (`fail_next`), losing itself then;
//  - can hold its calls until released (`State::hold`), to show where the next request is placed;
//  - imports "device memory" that is host memory, so device-region requests can be placed and served.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/backend/backend.h"
#include "server/backend/cpu/cpu_backend.h"

namespace gpusort::testing {

class StandInGpu final : public Backend {
 public:
  struct State {
    std::atomic<bool> lost{false};
    std::atomic<bool> fail_next{false};  // the next job fails and loses this GPU
    std::atomic<int> calls{0};           // jobs reaching it
    std::atomic<std::size_t> largest{0};  // the most keys of one call
    // While `hold` is set, calls wait (after counting themselves) until it is cleared.
    std::mutex mutex;
    std::condition_variable released;
    bool hold = false;
    void Hold() {
      const std::lock_guard lock(mutex);
      hold = true;
    }
    void Release() {
      {
        const std::lock_guard lock(mutex);
        hold = false;
      }
      released.notify_all();
    }
  };

  StandInGpu(int ordinal, std::size_t max_keys, std::shared_ptr<State> state = std::make_shared<State>())
      : ordinal_(ordinal), max_keys_(max_keys), state_(std::move(state)) {}

  std::shared_ptr<State> state() const { return state_; }

  BackendKind kind() const override { return BackendKind::kCuda; }
  std::string device() const override { return "cuda:" + std::to_string(ordinal_) + " stand-in"; }
  std::vector<Algorithm> sort_algorithms() const override { return {Algorithm::kRadix}; }
  std::vector<Algorithm> topk_algorithms() const override { return {Algorithm::kRadix}; }
  absl::Status Healthy() const override {
    return state_->lost ? absl::UnavailableError("the GPU failed: stand-in fault; this replica must be restarted")
                        : absl::OkStatus();
  }
  std::vector<DeviceServing> devices() const override { return {{"cuda:" + std::to_string(ordinal_), Healthy()}}; }
  int devices_lost() const override { return state_->lost ? 1 : 0; }
  absl::Status CheckSortLimits(const SortSpec&, std::size_t count) const override { return Fits(count); }
  absl::Status CheckTopKLimits(const TopKSpec&, std::size_t count) const override { return Fits(count); }

  // The CPU engine's work under this GPU's name. "Device memory" is host memory here, sorted as a
  // registered range is; a TopK in it is refused, as the engines' old default did.
  absl::Status Run(const Job& job) override {
    const bool in_region = job.memory == Memory::kDeviceRegion;
    if (in_region && std::holds_alternative<TopKWork>(job.work)) {
      return absl::FailedPreconditionError("device regions need a GPU server; this one serves from the CPU");
    }
    absl::Status status = Enter(JobKeys(job));
    if (!status.ok()) return status;
    const Memory memory = in_region ? Memory::kRegisteredHost : job.memory;
    if (const auto* work = std::get_if<SortWork>(&job.work)) {
      return RunSort(*cpu_, AsCpu(work->spec), work->buffers, job.cancellation, job.report, memory, work->keys_in);
    }
    const TopKWork& work = std::get<TopKWork>(job.work);
    return RunTopK(*cpu_, AsCpu(work.spec), work.buffers, job.cancellation, job.report, memory);
  }

  // "Device memory": the descriptor is ignored; the import is host memory of the size asked.
  absl::StatusOr<std::unique_ptr<DeviceMemoryImport>> ImportDeviceMemory(int, std::size_t bytes) override {
    return std::unique_ptr<DeviceMemoryImport>(new HostImport(bytes));
  }
 private:
  class HostImport final : public DeviceMemoryImport {
   public:
    explicit HostImport(std::size_t bytes) : bytes_(bytes) {}
    std::span<std::byte> bytes() const override { return std::span(const_cast<std::byte*>(bytes_.data()), bytes_.size()); }

   private:
    std::vector<std::byte> bytes_;
  };

  template <typename Spec>
  static Spec AsCpu(Spec spec) {
    spec.algorithm = Algorithm::kAuto;
    return spec;
  }

  absl::Status Fits(std::size_t count) const {
    return count <= max_keys_ ? absl::OkStatus() : absl::ResourceExhaustedError("stand-in GPU: out of memory");
  }

  absl::Status Enter(std::size_t count) {
    ++state_->calls;
    std::size_t seen = state_->largest.load();
    while (count > seen && !state_->largest.compare_exchange_weak(seen, count)) {
    }
    {
      std::unique_lock lock(state_->mutex);
      state_->released.wait(lock, [&] { return !state_->hold; });
    }
    if (state_->fail_next.exchange(false)) state_->lost = true;
    if (state_->lost) return Healthy();
    return Fits(count);
  }

  const int ordinal_;
  const std::size_t max_keys_;
  std::shared_ptr<State> state_;
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend({.threads = 1});
};

}  // namespace gpusort::testing
