// A Sort of keys alone between registered host ranges (a shared-memory region's), split in parts so that
// the GPU sorts while the keys cross PCIe (issue 18). The copies are the floor: 64 MiB take 1.2 ms each
// way on PCIe 5, and the radix sort of those 16M keys 0.44 ms, which the plain job (sort_job.h) runs
// between them. Here, with two parts:
//
//   side stream:  copy part A in | copy part B in
//   stream:                      | A to ordered bits, sort A | B to ordered bits, sort B, merge | copy out
//
// Part A is two thirds of the keys: its sort (under the copy of B) is shorter than B's copy, and B's
// sort, the only one left after the upload, is a third of the whole. From kThreePartsMinKeys there are
// three parts (1/2, 1/3, 1/6): the first two sort and merge while the third crosses, and the work left
// after the upload is a sixth's sort and the last merge (bench/split_upload_probe.cu on an H200, three
// parts against two: 16M keys 2.784 against 2.808 ms, 64M 10.35 against 10.61, 256M 40.92 against
// 41.83; a small part's sort costs mostly its fixed 0.1 ms, so below 16M two parts).
//
// Each part is sorted over the bits that vary in it (the host waits for each part's OR/AND, as the plain
// job waits for the whole's). Each part after the first merges with the sorted keys before it
// (kernels::MergeTwoSortedRuns: one read and one write of each key), the merged prefix moving between
// the two buffers. The last merge runs in slices (kernels::MergeTwoSortedRunsSlice), each turned back
// into keys and copied to the caller's range on the side stream while the next is merged: the copy out
// starts after an eighth of the last merge and of the key conversion, not after all of them (probe: 256M
// 40.29 against 40.87 ms).
//
// Device memory: the keys twice, and CUB's scratch for the largest part's sort, which keeps its input
// where it landed: for 8-byte keys that scratch holds a copy of the part (about 2.7 times the keys in all
// with two parts, against the plain job's 2), for 4-byte keys it does not. The engine falls back to the
// plain job when this one's memory is not there.
//
// Stages: h2d is the upload with every part's sort but the last under it; kernel is the last part's sort
// and the last merge (the first slices' copies out under it); d2h the copy out that outlasts the merge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/radix_sort.h"
#include "server/backend/cuda/device_key_bits.h"
#include "server/backend/cuda/gpu_job.h"
#include "server/backend/cuda/gpu_job_ends.h"
#include "server/core/spec.h"

namespace gpusort {

// From this many keys a Sort between registered host ranges splits its upload. Below it the sort is a
// small part of the call and the extra host waits and merge cost what the overlap saves.
inline constexpr std::size_t kSplitUploadMinKeys = std::size_t{1} << 22;
// From this many keys the upload splits in three parts, not two.
inline constexpr std::size_t kThreePartsMinKeys = std::size_t{1} << 24;
inline constexpr int kMaxUploadParts = 3;  // StreamSlot::side_done holds one event per part
// The last merge's slices, each copied out while the next is merged (at least kMinSliceKeys each).
inline constexpr int kAnswerSlices = 8;
inline constexpr std::size_t kMinSliceKeys = std::size_t{1} << 20;

class SplitUploadSortJob final : public GpuJob {
 public:
  // Whether a Sort of `count` keys from and to registered host memory takes this job: keys alone, a
  // radix sort, one array, keys of 4 or 8 bytes (narrower ones widen on the device: the plain job), and
  // at least kSplitUploadMinKeys of them.
  static bool Takes(const SortSpec& spec, std::size_t count);
  // How many parts `count` keys cross in: 3 from kThreePartsMinKeys, else 2.
  static int PartsFor(std::size_t count);

  // keys_in and keys_out lie in registered host memory (they may be the same range: every key has
  // crossed before the answer is written). `parts`: 2 or 3 (tests choose; the engine takes PartsFor).
  SplitUploadSortJob(const SortSpec& spec, std::span<const std::byte> keys_in, std::span<std::byte> keys_out,
                     std::size_t count, int parts);

  absl::Status Allocate(const GpuJobEnv& env) override;
  absl::Status Ingest(const GpuJobEnv& env) override;
  absl::Status Launch(const GpuJobEnv& env) override;
  absl::Status Egress(const GpuJobEnv& env) override;

  // Whether Allocate got the job's device memory (for 8-byte keys a third more than the plain job
  // takes, which a caller may fall back to when it did not).
  bool allocated() const { return allocated_; }
  int parts() const { return static_cast<int>(begin_.size()) - 1; }

 private:
  std::size_t begin(int part) const { return begin_[part]; }
  std::size_t length(int part) const { return begin_[part + 1] - begin_[part]; }
  // Part `part` of the landing buffer to ordered bits, its OR/AND into `or_and_host` (pinned, two words
  // per part), and the host waits for them: the bits that vary in the part.
  absl::StatusOr<std::uint64_t> OrderPart(const GpuJobEnv& env, int part, std::uint64_t* or_and_host);
  // Radix-sorts part `part` over the bits that vary in it, next to the sorted keys before it, and merges
  // the two: the sorted prefix then ends where the part ends, in the other buffer. The last part's merge
  // runs in slices, each sent to the caller's range as it is made (SendSlices).
  absl::Status SortAndMergePart(const GpuJobEnv& env, int part, std::uint64_t varying);
  // The merge of `from` (the prefix and the last part, sorted, side by side) into `to` in slices; each
  // slice back to keys on the stream, then copied out on the side stream, which the stream waits for last.
  absl::Status SendSlices(const GpuJobEnv& env, const kernels::DeviceAllocation& from, kernels::DeviceAllocation& to);

  KeyCoding coding_;
  std::span<const std::byte> keys_in_;
  std::size_t count_;
  std::vector<std::size_t> begin_;  // part p is keys [begin_[p], begin_[p + 1])
  std::span<std::byte> keys_out_;     // the caller's registered range for the answer
  kernels::DeviceAllocation landing_;  // the keys as they crossed; the sorted prefix after some merges
  kernels::DeviceAllocation runs_;     // the sorted prefix after the others
  kernels::DeviceAllocation temp_;     // CUB's scratch (the largest part's)
  kernels::DeviceAllocation or_and_;   // each part's OR/AND accumulator: 2 words a part
  std::size_t temp_bytes_ = 0;
  bool prefix_in_runs_ = true;         // where the sorted prefix lies
  std::uint64_t varying_last_ = 0;     // the bits that vary in the last part, for Launch
  bool allocated_ = false;
};

}  // namespace gpusort
