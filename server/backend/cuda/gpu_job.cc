#include "server/backend/cuda/gpu_job.h"

#include <algorithm>

#include "gpusort/kernels/runtime.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/core/status_macros.h"

namespace gpusort {

namespace {

absl::StatusOr<DeviceContext::Lease> LeaseSlot(DeviceContext& context) {
  // The calling thread may be any worker: the device is per thread in the CUDA runtime.
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::UseDevice(context.ordinal()), "selecting the GPU");
  return context.Acquire();
}

}  // namespace

absl::Status RunGpuStep(DeviceContext& context, const std::function<absl::Status(StreamSlot&)>& step) {
  ASSIGN_OR_RETURN(DeviceContext::Lease lease, LeaseSlot(context));
  return step(lease.slot());
}

absl::StatusOr<std::vector<DeviceContext::Lease>> LeaseSlots(std::span<DeviceContext* const> contexts) {
  std::vector<DeviceContext*> ordered(contexts.begin(), contexts.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const DeviceContext* a, const DeviceContext* b) { return a->ordinal() < b->ordinal(); });
  std::vector<DeviceContext::Lease> leases;
  leases.reserve(ordered.size());
  for (DeviceContext* context : ordered) {
    ASSIGN_OR_RETURN(DeviceContext::Lease lease, LeaseSlot(*context));
    leases.push_back(std::move(lease));
  }
  return leases;
}

absl::Status AllocateBuffers(const GpuJobEnv& env, std::initializer_list<BufferRequest> requests) {
  std::vector<std::size_t> sizes;
  sizes.reserve(requests.size());
  for (const BufferRequest& r : requests) sizes.push_back(r.bytes);
  std::vector<kernels::DeviceAllocation> allocated;
  RETURN_IF_ERROR(AllocateJobMemory(env, sizes, &allocated));
  std::size_t i = 0;
  for (const BufferRequest& r : requests) *r.buffer = std::move(allocated[i++]);
  return absl::OkStatus();
}

absl::Status AllocateJobMemory(const GpuJobEnv& env, const std::vector<std::size_t>& sizes,
                               std::vector<kernels::DeviceAllocation>* out) {
  if (env.buffers == JobBuffers::kOwned) return env.context.AllocateAll(env.slot.stream, sizes, out);
  return env.context.AllocateForJob(env.slot, sizes, out);
}

namespace {

// The job's steps on its leased slot, each stage timed into `report`.
absl::Status RunSteps(const GpuJobEnv& env, GpuJob& job, const Cancellation& cancellation, ExecutionReport& report) {
  StreamSlot& slot = env.slot;
  RETURN_IF_ERROR(job.Allocate(env));

  // "h2d" is the host's time in the ingest. An ingest that needs nothing back from the GPU (a small sort,
  // a top-k, a row sort: GpuKeySource::IngestKeysOnly) returns with its copies queued, and their GPU time
  // then falls in no stage (kernel_start completes after them). An event to time them cost issue 18's mix
  // 3-5% on one GPU and on two (docs/benchmarks-log.md, "fewer host waits"; why was not measured).
  StageClock h2d;
  RETURN_IF_ERROR(job.Ingest(env));
  report.AddStage(Stage::kH2d, h2d.Seconds());
  RETURN_IF_ERROR(cancellation.Check());

  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.kernel_start.Record(slot.stream), "recording an event");
  RETURN_IF_ERROR(job.Launch(env));
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.kernel_stop.Record(slot.stream), "recording an event");

  RETURN_IF_ERROR(job.Egress(env));
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.egress_stop.Record(slot.stream), "recording an event");
  // The job's end is egress_stop, the stream's last work: waiting on the event (not the stream) honours
  // --cuda-wait-spin-us. cudaStreamSynchronize spins under CUDA's own policy (fewer contexts than cores:
  // spin) whatever the flag says; with every waiter asleep, the two-GPU mix served 42.6-46.5K req/s
  // against 36.4-39.0K polling (docs/benchmarks-log.md, "waits that sleep").
  GPUSORT_RETURN_IF_KERNEL_ERROR(slot.egress_stop.Synchronize(), "finishing the job");
  double kernel_seconds = 0;
  (void)slot.kernel_stop.SecondsSince(slot.kernel_start, &kernel_seconds);
  report.AddStage(Stage::kKernel, kernel_seconds);
  // "d2h" from the kernels' end, not from when the host queued the egress behind them: the host's clock
  // counted the kernels' tail twice (a 16M shared-memory sort read "kernel 0.25, d2h 1.47 ms", as if the
  // copy ran at 46 GB/s; less the tail it is 1.22-1.26 ms, the floor's 53-55 GB/s). egress_stop is
  // recorded after Egress returns, so an egress that waits on the host (staged copies) is counted to its
  // end as well.
  double egress_seconds = 0;
  (void)slot.egress_stop.SecondsSince(slot.kernel_stop, &egress_seconds);
  report.AddStage(Stage::kD2h, egress_seconds);
  return absl::OkStatus();
}

}  // namespace

absl::Status RunGpuJob(DeviceContext& context, GpuJob& job, const Cancellation& cancellation,
                       ExecutionReport& report, JobBuffers buffers) {
  StageClock wait;
  ASSIGN_OR_RETURN(DeviceContext::Lease lease, LeaseSlot(context));
  StreamSlot& slot = lease.slot();
  report.AddStage(Stage::kStreamWait, wait.Seconds());
  RETURN_IF_ERROR(cancellation.Check());
  const absl::Status status = RunSteps(GpuJobEnv{context, slot, buffers}, job, cancellation, report);
  // A job may queue copies on the slot's side stream (split_upload_sort_job.h), and the pool orders the
  // job's frees after its stream only: whatever step stopped the job, those copies end before its
  // buffers go back and before the slot does. (A job that ends well has joined them to its stream.)
  // Its own stream may still hold copies from or to the caller's memory too (an ingest that does not
  // wait, values, results): they end before the call does, and with it the caller's hold on that memory.
  if (!status.ok()) {
    (void)slot.side.Synchronize();
    (void)slot.stream.Synchronize();
  }
  return status;
}

}  // namespace gpusort
