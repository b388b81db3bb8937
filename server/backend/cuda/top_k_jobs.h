// TopK on the GPU as GpuJobs (gpu_job.h). Keys cross as ordered bits, complemented for the largest, so
// that every kernel takes the smallest; only each row's k results come back, as ordered bits and int64
// positions, already in the reply's layout.
// - TopKSelectJob: a selection kernel (top_k_select.h) writes the k results of every row directly.
// - TopKBySortJob: each row's (or segment's, or the array's) stable sort, then its first k (a segment
//   shorter than k: all of it): RADIX (CUB's radix sort, or its segmented sort for rows and segments) or
//   BITONIC (rows of up to 4096 keys). Stable, so among equal keys the earlier position comes first,
//   which is the API's tie rule.
#pragma once

#include <cstddef>

#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/segmented_sort.h"
#include "gpusort/kernels/top_k.h"
#include "server/backend/cuda/gpu_job.h"
#include "server/backend/cuda/gpu_job_ends.h"
#include "server/backend/cuda/top_k_select.h"
#include "server/core/spec.h"

namespace gpusort {

// What both forms share: the spec, the two ends and the result buffers.
class TopKJob : public GpuJob {
 public:
  absl::Status Egress(const GpuJobEnv& env) override;

 protected:
  TopKJob(const TopKSpec& spec, KeyCoding coding, GpuKeySource& source, GpuResultSink& sink);
  std::size_t count() const { return source_.count(); }
  std::size_t row_length() const { return count() / spec_.rows; }
  std::size_t results() const { return spec_.results(); }
  // The result buffers, in the sizes the request asks for (0 for what it does not want).
  BufferRequest out_keys_request() { return {&out_keys_, spec_.wants_values() ? results() * coding_.device_key_bytes() : 0}; }
  BufferRequest out_positions_request() { return {&out_positions_, spec_.wants_indices() ? results() * 8 : 0}; }

  const TopKSpec spec_;
  const KeyCoding coding_;
  GpuKeySource& source_;
  GpuResultSink& sink_;
  kernels::DeviceAllocation out_keys_, out_positions_;
};

class TopKSelectJob final : public TopKJob {
 public:
  // `algorithm`: one of the selection kernels, its limits already checked.
  TopKSelectJob(const TopKSpec& spec, Algorithm algorithm, GpuKeySource& source, GpuResultSink& sink);
  absl::Status Allocate(const GpuJobEnv& env) override;
  absl::Status Ingest(const GpuJobEnv& env) override;
  absl::Status Launch(const GpuJobEnv& env) override;

 private:
  const Algorithm algorithm_;
  const TopKSelection selection_;
  // RADIX_SELECT over keys lent where they lie (GpuKeySource::raw_device_keys), 32 or 64 bits: the
  // kernel reads the caller's keys itself, turning them into ordered bits as it goes; nothing is copied.
  const bool reads_in_place_;
  kernels::TopKArgs args_;
  std::size_t temp_bytes_ = 0;
  kernels::DeviceAllocation keys_, temp_;
};

class TopKBySortJob final : public TopKJob {
 public:
  // `algorithm`: RADIX or BITONIC (BITONIC sorts rows of up to 4096 keys; anything else goes by RADIX).
  TopKBySortJob(const TopKSpec& spec, Algorithm algorithm, GpuKeySource& source, GpuResultSink& sink);
  // The kernel that runs: BITONIC or RADIX.
  Algorithm algorithm() const { return bitonic_rows_ ? Algorithm::kBitonic : Algorithm::kRadix; }
  absl::Status Allocate(const GpuJobEnv& env) override;
  absl::Status Ingest(const GpuJobEnv& env) override;
  absl::Status Launch(const GpuJobEnv& env) override;

 private:
  absl::Status SortRows(const kernels::Stream& stream);

  const bool bitonic_rows_;  // the bitonic network sorts in place, by (key, position): stable
  kernels::RadixSortArgs whole_;  // rows == 1
  kernels::RowSortArgs rows_;     // rows > 1, by RADIX
  kernels::SegmentSortArgs segments_;  // by segment offsets
  kernels::SegmentSortPlan plan_;      // segments_'s
  std::size_t temp_bytes_ = 0;
  std::uint64_t varying_ = 0;
  int result_ = 0;
  kernels::DeviceAllocation keys_[2], positions_[2], temp_;
  kernels::DeviceAllocation offsets_, result_offsets_;  // by segment offsets: spec_'s, as int64
};

}  // namespace gpusort
