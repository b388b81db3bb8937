// The two ends of a GPU job: where its keys (and values) come from, and where its results go. The job
// (sort_job.h, top_k_jobs.h) is the same whatever they are; a new way in or out is one type
// implementing one of these, not a new path through the engine.
//
// Sources and sinks in use (sinks mirror sources):
//   staged_host_ends.h        bytes in a gRPC message: pageable host memory, through the slot's pinned
//                             staging buffers, key bits converted by the host as they cross;
//   registered_host_ends.h    a registered shared-memory range: DMA straight from and to it, key bits
//                             converted on the device; or a caller's device region (device_regions.h),
//                             read and written where it lies (RADIX_SELECT reads its raw keys in place);
//   device_resident_ends.h    keys already on this GPU as ordered bits (a stream's pieces or a parted
//                             sort's ranges, ingested before the job), and results kept there to be
//                             read back range by range.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpusort/kernels/key_order.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/radix_sort.h"
#include "server/backend/cuda/device_key_bits.h"
#include "server/backend/cuda/gpu_job.h"
#include "server/core/dtype.h"

namespace gpusort {

// How keys look on the device while a job works on them: ordered bits (key_order.h), complemented
// for descending order or largest-first top-k, so that every kernel sorts unsigned ascending; narrow
// keys zero-extended to 32 bits (device_key_bits.h), except for a job whose kernel takes 16-bit keys as
// they are (SMALL_K top-k: half the bytes to read, the common case of float16/bfloat16 logits).
struct KeyCoding {
  DType dtype;
  bool complement = false;
  bool native_width = false;  // 16-bit keys stay 16 bits on the device; only where key_bytes() == 2

  std::size_t key_bytes() const { return ElementSize(dtype); }  // in the request
  std::size_t device_key_bytes() const {  // on the device (device_key_bits.h)
    return native_width ? key_bytes() : DeviceKeyBytes(dtype);
  }
  kernels::KeyWidth width() const {
    switch (device_key_bytes()) {
      case 2: return kernels::KeyWidth::k16;
      case 4: return kernels::KeyWidth::k32;
      default: return kernels::KeyWidth::k64;
    }
  }
  kernels::KeyKind kind() const;
};

// A position array on the device: a sort's uint32 positions, or a top-k's int64 ones.
enum class PositionWidth { kU32, kI64 };

class GpuKeySource {
 public:
  virtual ~GpuKeySource() = default;
  virtual std::size_t count() const = 0;
  // A source whose keys already lie on this device as ordered bits lends the buffer holding them; the
  // job then sorts in it and needs no buffer or copy of its own. nullptr for the others.
  virtual kernels::DeviceAllocation* resident_keys() { return nullptr; }
  // A source whose keys lie on this device as the caller's own keys (an imported device region) lends
  // them, so that a kernel that reads raw keys (RADIX_SELECT, TopKArgs::raw_keys) selects where they
  // are, with no copy. nullptr for the others.
  virtual const void* raw_device_keys() const { return nullptr; }
  // Puts count() keys, as `coding`'s ordered bits, at `device_keys` and returns which bits vary
  // (OR ^ AND over them). May return with copies still queued on the slot's stream. A job that reads
  // raw_device_keys() where they lie passes a null `device_keys`: then only the varying bits are found
  // (only sources that lend raw_device_keys() take it).
  virtual absl::StatusOr<std::uint64_t> IngestKeys(const GpuJobEnv& env, const KeyCoding& coding,
                                                   void* device_keys) = 0;
  // IngestKeys for a job that uses every bit (a top-k selection, a row sort, a small sort): a source that
  // must read the varying bits back from the GPU skips that copy and the host's wait for it, and with a
  // null `device_keys` does nothing at all.
  virtual absl::Status IngestKeysOnly(const GpuJobEnv& env, const KeyCoding& coding, void* device_keys) {
    return IngestKeys(env, coding, device_keys).status();
  }
  // Copies the values (`bytes` in all, `width` each), as they are, to `device_values`.
  virtual absl::Status IngestValues(const GpuJobEnv& env, void* device_values, std::size_t bytes,
                                    std::size_t width);
};

class GpuResultSink {
 public:
  virtual ~GpuResultSink() = default;
  // A sink whose keys go to a caller's memory on this device lends that range (count keys of the
  // request's width), so that a sort whose ordered bits are the keys themselves writes its answer there
  // and skips EgressKeys. nullptr for the others.
  virtual void* raw_device_keys_out() { return nullptr; }
  // `keys` holds `count` result keys as `coding`'s ordered bits. The sink may convert them in place or
  // keep the buffer itself (moving it out).
  virtual absl::Status EgressKeys(const GpuJobEnv& env, const KeyCoding& coding, kernels::DeviceAllocation& keys,
                                  std::size_t count) = 0;
  // `positions` holds `count` positions of `width`; the API's are int64, so kU32 ones widen on the way.
  virtual absl::Status EgressPositions(const GpuJobEnv& env, kernels::DeviceAllocation& positions,
                                       std::size_t count, PositionWidth width);
  // `bytes` of values, `width` each, as they are.
  virtual absl::Status EgressValues(const GpuJobEnv& env, const void* device_values, std::size_t bytes,
                                    std::size_t width);
};

}  // namespace gpusort
