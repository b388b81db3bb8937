// A Sort of keys alone between registered host ranges (a shared-memory region's), split in two so that
// the GPU sorts while the keys cross PCIe (issue 18). The copies are the floor: 64 MiB take 1.2 ms each
// way on the H100's PCIe 5, and the radix sort of those 16M keys 0.44 ms, which the plain job
// (sort_job.h) runs between them. Here:
//
//   side stream:  copy part A in | copy part B in
//   stream:                      | A to ordered bits, sort A | B to ordered bits, sort B, merge | copy out
//
// Part A is two thirds of the keys: its sort (under the copy of B) is shorter than B's copy, and B's
// sort, the only one left after the upload, is a third of the whole. Each part is sorted over the bits
// that vary in it (the host waits for each part's OR/AND, as the plain job waits for the whole's), the
// two sorted runs merge (kernels::MergeTwoSortedRuns: one read and one write of each key) and the answer
// leaves as the plain job's does (RegisteredHostResults). Device memory: the keys twice, and CUB's
// scratch for part A's sort, which keeps its input where it landed: for 8-byte keys that scratch holds a
// copy of part A (about 2.7 times the keys in all, against the plain job's 2), for 4-byte keys it does
// not. The engine falls back to the plain job when this one's memory is not there.
//
// Stages: h2d is the upload with part A's sort under it; kernel is part B's sort and the merge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/radix_sort.h"
#include "server/backend/cuda/device_key_bits.h"
#include "server/backend/cuda/gpu_job.h"
#include "server/backend/cuda/registered_host_ends.h"
#include "server/core/spec.h"

namespace gpusort {

// From this many keys a Sort between registered host ranges splits its upload. Below it the sort is a
// small part of the call and the extra host waits and merge cost what the overlap saves.
inline constexpr std::size_t kSplitUploadMinKeys = std::size_t{1} << 22;

class SplitUploadSortJob final : public GpuJob {
 public:
  // Whether a Sort of `count` keys from and to registered host memory takes this job: keys alone, a
  // radix sort, one array, keys of 4 or 8 bytes (narrower ones widen on the device: the plain job), and
  // at least kSplitUploadMinKeys of them.
  static bool Takes(const SortSpec& spec, std::size_t count);

  // keys_in and keys_out lie in registered host memory (they may be the same range: every key has
  // crossed before the answer is written).
  SplitUploadSortJob(const SortSpec& spec, std::span<const std::byte> keys_in, std::span<std::byte> keys_out,
                     std::size_t count);

  absl::Status Allocate(const GpuJobEnv& env) override;
  absl::Status Ingest(const GpuJobEnv& env) override;
  absl::Status Launch(const GpuJobEnv& env) override;
  absl::Status Egress(const GpuJobEnv& env) override;

  // Whether Allocate got the job's device memory (for 8-byte keys a third more than the plain job
  // takes, which a caller may fall back to when it did not).
  bool allocated() const { return allocated_; }

 private:
  std::size_t part_b() const { return count_ - part_a_; }
  // Part [begin, begin + count) of the landing buffer to ordered bits, its OR/AND into `or_and_host`
  // (pinned), and the host waits for them: the bits that vary in the part.
  absl::StatusOr<std::uint64_t> OrderPart(const GpuJobEnv& env, std::size_t begin, std::size_t count,
                                          std::uint64_t* or_and_host, std::uint64_t* or_and_device);
  // Radix-sorts part [begin, begin + count) of the landing buffer into the same place in runs_.
  absl::Status SortPart(const GpuJobEnv& env, std::size_t begin, std::size_t count, std::uint64_t varying);
  absl::Status IngestParts(const GpuJobEnv& env);

  KeyCoding coding_;
  std::span<const std::byte> keys_in_;
  std::size_t count_, part_a_;
  RegisteredHostResults sink_;
  kernels::DeviceAllocation landing_;  // the keys as they crossed; the merged answer at the end
  kernels::DeviceAllocation runs_;     // the two sorted parts, one after the other
  kernels::DeviceAllocation temp_;     // CUB's scratch (the larger part's)
  kernels::DeviceAllocation or_and_;   // each part's OR/AND accumulator: 4 words
  std::size_t temp_bytes_ = 0;
  std::uint64_t varying_b_ = 0;        // the bits that vary in part B, for Launch
  bool allocated_ = false;
};

}  // namespace gpusort
