// A Sort on the GPU, as one GpuJob (gpu_job.h): CUB's radix sort (AUTO, RADIX), over the bits that vary
// once the keys pass kSortsEveryBitUpToBytes, or the comparison sort the caller named, with what rides
// along: positions for argsort, values of 4 or 8 bytes directly, values of other widths (and every value
// under a comparison sort, which carries positions only) gathered by the positions after the sort. Its
// keys come from any GpuKeySource and its results go to any GpuResultSink.
//
// Keys whose ordered bits are the keys themselves (unsigned, ascending, full width) that lie in a
// caller's device memory and go back to it (GpuKeySource::raw_device_keys, GpuResultSink::
// raw_device_keys_out) are sorted from the caller's input range straight into its output range: no
// copy in, no conversion, no copy out (the 16M u32 device-region sort of BENCHMARKS.md).
#pragma once

#include <cstddef>

#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/radix_sort.h"
#include "server/backend/cuda/gpu_job.h"
#include "server/backend/cuda/gpu_job_ends.h"
#include "server/core/spec.h"

namespace gpusort {

class SortJob final : public GpuJob {
 public:
  // `algorithm`: RADIX or a comparison sort (the engine has resolved AUTO). count() keys of `source`.
  SortJob(const SortSpec& spec, Algorithm algorithm, GpuKeySource& source, GpuResultSink& sink);

  absl::Status Allocate(const GpuJobEnv& env) override;
  absl::Status Ingest(const GpuJobEnv& env) override;
  absl::Status Launch(const GpuJobEnv& env) override;
  absl::Status Egress(const GpuJobEnv& env) override;

 private:
  // What rides with the keys through the sort.
  enum class Carry {
    kNothing,     // keys alone
    kPositions,   // uint32 positions: the answer (argsort)
    kValues,      // 4- or 8-byte values, moved by the radix sort itself
    kGatherOrder  // positions, by which the values are gathered after the sort
  };
  static Carry CarryFor(const SortSpec& spec, bool comparison);
  std::size_t count() const { return source_.count(); }
  std::size_t carry_bytes() const;  // per key
  // Up to this many bytes of device keys a radix sort takes every bit instead of reading back which
  // vary (SortsEveryBit).
  static constexpr std::size_t kSortsEveryBitUpToBytes = std::size_t{4} << 20;
  bool SortsEveryBit() const;
  static bool SortsWhereKeysLie(const SortSpec& spec, bool comparison, const KeyCoding& coding,
                                GpuKeySource& source, GpuResultSink& sink);

  const SortSpec spec_;
  const Algorithm algorithm_;
  const bool comparison_;
  const Carry carry_;
  const KeyCoding coding_;
  GpuKeySource& source_;
  GpuResultSink& sink_;
  const bool where_keys_lie_;  // SortsWhereKeysLie: keys[0] is the caller's input, keys[1] its output

  kernels::RadixSortArgs args_;
  std::size_t temp_bytes_ = 0;
  int result_ = 0;  // which of the double buffers holds the sorted keys (and what they carry)
  // Device buffers by role. The comparison sorts work in place: no second keys or carry buffers.
  kernels::DeviceAllocation keys_[2], carried_[2], temp_, values_in_, values_out_;
};

}  // namespace gpusort
