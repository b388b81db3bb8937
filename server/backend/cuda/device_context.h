// What the CUDA backend owns on its GPU: the device, its memory pool, and a fixed set of stream slots,
// each with its own streams, timing events and two pinned staging buffers. Everything is created at
// start-up, so a warm request allocates nothing but pool memory (no cudaMalloc, no cudaHostAlloc).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"
#include "server/backend/cuda/pinned_pool.h"

namespace gpusort {

struct StreamSlot {
  kernels::Stream stream;
  // Around the job's kernels, and after its results are in place: "kernel" and "d2h" are the GPU's time
  // between them (gpu_job.cc). The job's end waits on egress_stop; the other two only time
  // (Event::CreateForTiming).
  kernels::Event kernel_start, kernel_stop, egress_stop;
  kernels::PinnedBuffer staging[2];  // double-buffered: the host fills one while the other copies
  kernels::Event staging_free[2];    // recorded after the copy that last used staging[i]
  // A second stream, for a job that copies while it computes (split_upload_sort_job.h: the keys' second
  // part crosses PCIe here while the first part sorts on `stream`), and events its copies record. A job
  // that ends well joins it to `stream`; RunGpuJob waits for it when a job stops early.
  kernels::Stream side;
  kernels::Event side_done[3];
  // Device memory the slot's jobs borrow their buffers from (DeviceContext::AllocateForJob), so that a
  // warm request of up to kept_block_bytes never calls the driver's pool. Its allocations and frees
  // take a lock that every GPU of the process shares: with two GPUs, 64 callers and 16 streams each,
  // gdb found 19-27 of the 64 call threads waiting on it, and the mix ran slower than on one GPU.
  // Lending needs no lock: the lease is the slot's only user, and every use of the block is ordered on
  // `stream` (a job's side copies join it, or are waited for), so the next lease's kernels run after
  // the last one's. A job's borrowed buffers must not be used once its lease is returned.
  kernels::DeviceAllocation kept;
  std::size_t kept_lent = 0;    // bytes lent to the current lease's jobs (0 at each Acquire)
  std::size_t kept_wanted = 0;  // what a job of this slot would have borrowed: the block grows to it
};

struct DeviceContextOptions {
  int ordinal = 0;
  int streams = 4;
  std::size_t staging_bytes = std::size_t{16} << 20;  // per staging buffer; two per stream
  // Most device memory requests may hold at once (0: as much as the GPU has). On a GPU shared with other
  // processes this keeps gpusort to its share; past it a request is refused as if the GPU were full.
  std::size_t memory_limit_bytes = 0;
  // Most device memory each stream keeps for its jobs' buffers (StreamSlot::kept); 0: none, every
  // buffer from the pool. Never kept under a memory limit, where idle memory would count against it.
  std::size_t kept_block_bytes = std::size_t{64} << 20;
};

class DeviceContext {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceContext>> Create(const DeviceContextOptions& options);
  ~DeviceContext();  // its slots' kept blocks leave the GPU's count (KeptOnDevice)

  int ordinal() const { return ordinal_; }
  const kernels::DeviceProperties& properties() const { return properties_; }
  const kernels::DeviceMemoryPool& pool() const { return pool_; }
  std::size_t memory_limit_bytes() const { return memory_limit_bytes_; }  // 0: no limit

  // A slot for the duration of one job; waits while every slot is busy (admission bounds the wait).
  class Lease {
   public:
    Lease(DeviceContext& context, StreamSlot& slot) : context_(&context), slot_(&slot) {}
    Lease(Lease&& other) noexcept : context_(other.context_), slot_(other.slot_) { other.slot_ = nullptr; }
    Lease(const Lease&) = delete;
    ~Lease() { if (slot_) context_->Return(slot_); }
    StreamSlot& slot() const { return *slot_; }

   private:
    DeviceContext* context_;
    StreamSlot* slot_;
  };
  Lease Acquire();

  // Allocates `sizes` from the pool on `stream`, all or none. When the device is out of memory the pool's
  // cache is trimmed and the whole set is tried once more; then RESOURCE_EXHAUSTED.
  absl::Status AllocateAll(const kernels::Stream& stream, const std::vector<std::size_t>& sizes,
                           std::vector<kernels::DeviceAllocation>* out);
  // A job's buffers on its leased `slot`, all or none: borrowed from the slot's kept block where they fit
  // beside what the lease already borrowed, else from the pool as AllocateAll. The borrowed buffers are
  // valid until the lease is returned.
  absl::Status AllocateForJob(StreamSlot& slot, const std::vector<std::size_t>& sizes,
                              std::vector<kernels::DeviceAllocation>* out);
  // The pool's "used" bytes less every kept block on this GPU: what requests hold. The pool is the
  // device's default one, which every context of the process on the GPU shares (tests make several).
  std::size_t PoolUsedByRequests() const;
  // The kept blocks of every context of the process on this GPU (in the pool's "used" count, though
  // no request may hold them).
  std::size_t KeptOnDevice() const;

  // A sticky CUDA error (kernel_status.h's IsDeviceLost) met by any job leaves this process's context
  // on the GPU unusable for good. Every way out of the CUDA backend passes its status through Watch,
  // which notes the first such error and returns the status unchanged; from then on Health() is
  // UNAVAILABLE, naming the error (Backend::Healthy).
  absl::Status Watch(absl::Status status);
  absl::Status Health() const;

  // Pinned buffers for keys that arrive from sockets (the data port's direct parts), kept for reuse.
  PinnedPool& pinned_pool() { return pinned_pool_; }

 private:
  DeviceContext() = default;
  void Return(StreamSlot* slot);
  // Frees the kept blocks of the slots no lease holds (stream-ordered), before the pool is trimmed.
  void ReleaseIdleKeptBlocks();
  void CountKept(std::ptrdiff_t bytes);  // its GPU's kept bytes (KeptOnDevice), up or down
  // Replaces the slot's kept block by one of at least `bytes` (a power of two); false where the pool has
  // no room for it (then the slot keeps none until a later job asks again).
  bool GrowKeptBlock(StreamSlot& slot, std::size_t bytes);

  int ordinal_ = 0;
  std::size_t memory_limit_bytes_ = 0;
  std::size_t kept_block_bytes_ = 0;
  kernels::DeviceProperties properties_;
  kernels::DeviceMemoryPool pool_;
  std::vector<std::unique_ptr<StreamSlot>> slots_;
  std::mutex mutex_;
  std::condition_variable slot_returned_;
  std::vector<StreamSlot*> free_slots_;
  std::mutex trim_mutex_;
  std::atomic<bool> lost_{false};  // set once, after lost_message_
  mutable std::mutex lost_mutex_;
  std::string lost_message_;
  // At most 4 GiB of page-locked host memory: a 1G-key u32 sort from the data port, or several smaller.
  PinnedPool pinned_pool_{std::size_t{4} << 30};
};

}  // namespace gpusort
