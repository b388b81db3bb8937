// A Sort of rows of equal length (SortSpec::rows) or of segments by offsets (SortSpec::segment_offsets)
// on the GPU, each sorted on its own, as one GpuJob: BITONIC sorts rows of up to 4096 keys in place, one
// block per row (the network compares (key, position), so equal keys keep their order); RADIX runs
// CUB's segmented sort over the rows, and segments by offsets go to SegmentSort (bitonic tiles for
// segments of up to 4096 keys, CUB's segmented sort for longer ones). Indices count from the row's or segment's start, as
// the API's do; values are gathered by the positions after the sort. Its keys come from any
// GpuKeySource and its results go to any GpuResultSink.
#pragma once

#include <cstddef>

#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/segmented_sort.h"
#include "server/backend/cuda/gpu_job.h"
#include "server/backend/cuda/gpu_job_ends.h"
#include "server/core/spec.h"

namespace gpusort {

// INVALID_ARGUMENT unless `spec.algorithm` sorts rows or segments of this shape: AUTO, RADIX, or BITONIC
// for rows (not segments) of at most kBitonicRowsMaxLength keys (the other comparison sorts sort one
// array). OK for one array.
absl::Status CheckRowSort(const SortSpec& spec, std::size_t count);

class RowSortJob final : public GpuJob {
 public:
  // `algorithm`: BITONIC (rows of at most kBitonicRowsMaxLength keys) or RADIX; spec.segmented().
  RowSortJob(const SortSpec& spec, Algorithm algorithm, GpuKeySource& source, GpuResultSink& sink);

  absl::Status Allocate(const GpuJobEnv& env) override;
  absl::Status Ingest(const GpuJobEnv& env) override;
  absl::Status Launch(const GpuJobEnv& env) override;
  absl::Status Egress(const GpuJobEnv& env) override;

 private:
  std::size_t count() const { return source_.count(); }
  std::size_t row_length() const { return count() / spec_.rows; }
  // Equal rows by the bitonic rows kernel, in place (segments go to SegmentSort, whatever the algorithm).
  bool bitonic() const { return algorithm_ == Algorithm::kBitonic && !by_offsets(); }
  bool by_offsets() const { return spec_.segment_offsets != nullptr; }
  // Positions are sorted along when the answer needs them (indices, or values to gather), and always by
  // the segmented sort, which writes them either way.
  bool with_positions() const { return spec_.payload != SortPayload::kNone || !bitonic(); }
  absl::Status LaunchByOffsets(const kernels::Stream& stream);

  const SortSpec spec_;
  const Algorithm algorithm_;
  const KeyCoding coding_;
  GpuKeySource& source_;
  GpuResultSink& sink_;

  kernels::RowSortArgs segmented_;    // rows, by RADIX
  kernels::SegmentSortArgs by_offsets_;  // segments
  kernels::SegmentSortPlan plan_;        // by_offsets_'s
  std::size_t temp_bytes_ = 0;
  int result_ = 0;  // which of the double buffers holds the answer (the bitonic sort: 0, in place)
  kernels::DeviceAllocation keys_[2], positions_[2], temp_, values_in_, values_out_, offsets_;
};

}  // namespace gpusort
