#include "server/backend/cuda_backend.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <span>
#include <string_view>
#include <utility>

#include "gpusort/kernels/runtime.h"
#include "server/backend/auto_router.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/backend/cuda/cuda_engine.h"
#include "server/backend/cuda/device_context.h"
#include "server/backend/cuda/device_merged_sort.h"
#include "server/backend/cuda/device_regions.h"
#include "server/backend/gpu_set.h"
#include "server/core/caller_text.h"
#include "server/core/status_macros.h"

namespace gpusort {

namespace {

// The set's merge across GPUs (gpu_set.h) on these GPUs' contexts. A sticky error met on any of them is
// watched on each: the status does not say which GPU met it, and on the H200 pair such an error ruined
// the process's other GPU too (multi_gpu_fault_test).
MergeOnDevices MergeOnDevicesOf(std::map<int, std::shared_ptr<DeviceContext>> contexts) {
  return [contexts = std::move(contexts)](std::span<const int> ordinals, const SortWork& work,
                                          std::size_t max_run_keys, const Cancellation& cancellation,
                                          ExecutionReport& report) -> absl::StatusOr<bool> {
    std::vector<DeviceContext*> on;
    for (const int ordinal : ordinals) on.push_back(contexts.at(ordinal).get());
    absl::StatusOr<bool> done = SortMergedOnDevices(on, work.spec, work.buffers.count, work.source(),
                                                    work.buffers.keys, work.buffers.indices_out, max_run_keys,
                                                    cancellation, report);
    if (done.ok()) return done;
    for (DeviceContext* context : on) (void)context->Watch(done.status());
    return done.status();
  };
}

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const CudaBackendOptions& options) {
  kernels::SetEventWaitSpin(options.wait_spin);
  const std::vector<int> ordinals = options.devices.empty() ? std::vector<int>{options.engine.device} : options.devices;
  // One poller a GPU unless told: on issue 18's mix (64 in flight, two H200s) a poller a GPU served
  // 4-10% more than a quarter of the cores, on one GPU and on two (docs/benchmarks-log.md, issue 19).
  kernels::SetMostEventPollers(options.wait_pollers != 0 ? options.wait_pollers
                                                         : static_cast<unsigned>(ordinals.size()));
  std::vector<GpuSetMember> members;
  std::map<int, std::shared_ptr<DeviceContext>> contexts;
  for (const int ordinal : ordinals) {
    CudaEngineOptions engine = options.engine;
    engine.device = ordinal;
    absl::StatusOr<std::shared_ptr<DeviceContext>> context = MakeDeviceContext(engine);
    if (!context.ok()) {
      if (ordinals.size() == 1) return context.status();
      return absl::Status(context.status().code(), "GPU " + std::to_string(ordinal) + " of --cuda-devices: " +
                                                       std::string(context.status().message()));
    }
    contexts[ordinal] = *context;
    kernels::DeviceProperties properties;
    const std::size_t total = kernels::GetDeviceProperties(ordinal, &properties).ok() ? properties.total_memory : 0;
    members.push_back({.ordinal = ordinal,
                       .engine = MakeCudaEngineOn(std::move(*context)),
                       .memory_bytes = engine.memory_limit_bytes != 0 ? engine.memory_limit_bytes : total});
  }
  std::unique_ptr<Backend> gpus =
      MakeGpuSet(std::move(members), {.split_from_keys = options.split_from_keys,
                                      .merge_threads = options.cpu_threads,
                                      .max_request_bytes = options.max_request_bytes,
                                      .home_of_region = [](int fd) { return HomeDeviceOf(fd); },
                                      .merge_on_devices = MergeOnDevicesOf(std::move(contexts))});
  return MakeAutoRouter(MakeCpuBackend({.threads = options.cpu_threads}), std::move(gpus), options.auto_routing);
}

absl::StatusOr<std::vector<int>> ParseCudaDevices(const std::string& value) {
  std::vector<int> devices;
  if (value == "all") {
    std::string why_none;
    const int count = kernels::CountDevices(&why_none);
    if (count <= 0) return absl::UnavailableError("--cuda-devices all: no usable GPU: " + why_none);
    for (int d = 0; d < count; ++d) devices.push_back(d);
    return devices;
  }
  std::size_t from = 0;
  while (from <= value.size()) {
    const std::size_t comma = std::min(value.find(',', from), value.size());
    const std::string_view item = std::string_view(value).substr(from, comma - from);
    from = comma + 1;
    int d = -1;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), d);
    if (item.empty() || error != std::errc() || end != item.data() + item.size() || d < 0 || d > 255) {
      return absl::InvalidArgumentError("--cuda-devices: \"" + CallerText(item, 32) +
                                        "\" is not a GPU ordinal (all, or a list such as 0,1)");
    }
    if (std::find(devices.begin(), devices.end(), d) != devices.end()) {
      return absl::InvalidArgumentError("--cuda-devices names GPU " + std::to_string(d) + " twice");
    }
    devices.push_back(d);
  }
  return devices;
}

}  // namespace gpusort
