// The CUDA engine's one pipeline. Every GPU request, whatever carries its keys in and its answer out,
// is a GpuJob run by RunGpuJob, which does the steps they all share, in this order and nowhere else:
//
//   select the device, lease a stream slot       stage "stream_wait"
//   allocate the job's device buffers             (all or none: borrowed from the slot's kept block where
//                                                 they fit, else from the pool, which trims and retries once)
//   ingest: the job's source -> device            stage "h2d"
//   launch: the kernels, between the slot's       stage "kernel" (CUDA events, device time)
//           timing events
//   egress: device -> the job's sink              stage "d2h" (until the stream is done)
//
// with the cancellation checked after the lease and after the ingest. A kind of job (sort_job.h,
// top_k_jobs.h, row_sort_job.h) says only what differs: which buffers, which kernels; where its keys come
// from and where its results go are its GpuKeySource and GpuResultSink (gpu_job_ends.h).
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "gpusort/kernels/memory.h"
#include "server/backend/cuda/device_context.h"
#include "server/core/cancellation.h"
#include "server/core/execution_report.h"

namespace gpusort {

// Where a job's device buffers come from. Most jobs' buffers die with the job: they borrow from the
// slot's kept block (DeviceContext::AllocateForJob), which the slot's next lease reuses. A job whose
// results stay on the device after it (DeviceResidentResults: a stream's sorted keys, read back range by
// range under later leases) takes them from the pool, where they are its own.
enum class JobBuffers { kBorrowed, kOwned };

// What a job's steps work with: the engine's context (for its pool) and the leased slot.
struct GpuJobEnv {
  DeviceContext& context;
  StreamSlot& slot;
  JobBuffers buffers = JobBuffers::kBorrowed;
};

class GpuJob {
 public:
  virtual ~GpuJob() = default;
  // Sizes and allocates the job's device buffers (AllocateBuffers: env.context.AllocateForJob).
  virtual absl::Status Allocate(const GpuJobEnv& env) = 0;
  // Brings the keys (and values) in; may return with copies still queued on the slot's stream.
  virtual absl::Status Ingest(const GpuJobEnv& env) = 0;
  // Queues the kernels on the slot's stream.
  virtual absl::Status Launch(const GpuJobEnv& env) = 0;
  // Sends the results out; RunGpuJob waits for the stream afterwards.
  virtual absl::Status Egress(const GpuJobEnv& env) = 0;
};

// One of a job's device buffers and the bytes it needs (0: a buffer this request does not use).
struct BufferRequest {
  kernels::DeviceAllocation* buffer;
  std::size_t bytes;
};
// Allocates every buffer of `requests` for the job on the leased slot, all or none
// (DeviceContext::AllocateForJob). Jobs name their buffers, rather than index one list.
absl::Status AllocateBuffers(const GpuJobEnv& env, std::initializer_list<BufferRequest> requests);
// The same for a list of sizes, for the job's ends (gpu_job_ends.h): as env.buffers says, all or none.
absl::Status AllocateJobMemory(const GpuJobEnv& env, const std::vector<std::size_t>& sizes,
                               std::vector<kernels::DeviceAllocation>* out);

// Runs `step`, a piece of work that is not a whole job (an ingest's piece, a ranged read: sort_ingest.cc),
// on a slot of `context`'s GPU: the device selected, a slot leased for the step and given back after.
absl::Status RunGpuStep(DeviceContext& context, const std::function<absl::Status(StreamSlot&)>& step);

// A slot of each GPU, leased in the GPUs' order (so that two callers never wait on each other's GPUs),
// for work that spans them (device_merged_sort.cc). The device selected last is the last GPU's.
absl::StatusOr<std::vector<DeviceContext::Lease>> LeaseSlots(std::span<DeviceContext* const> contexts);

// Runs `job` through the pipeline above and adds its stages to `report`.
absl::Status RunGpuJob(DeviceContext& context, GpuJob& job, const Cancellation& cancellation,
                       ExecutionReport& report, JobBuffers buffers = JobBuffers::kBorrowed);

}  // namespace gpusort
