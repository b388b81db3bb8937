// Stable sort of many equal-length rows of ordered key bits at once (CUB DeviceSegmentedSort), each key
// carrying its position within its row. Used for TopK over rows and for batches of small arrays.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"

namespace gpusort::kernels {

struct RowSortArgs {
  KeyWidth key_width = KeyWidth::k32;
  std::size_t rows = 0;
  std::size_t row_length = 0;    // rows * row_length at most 2^31 - 1
  void* keys[2] = {nullptr, nullptr};     // keys[0]: input, row-major; keys[1]: scratch
  void* indices[2] = {nullptr, nullptr};  // uint32_t scratch pairs; the sort writes 0..row_length-1
};

Status RowSortTempBytes(const RowSortArgs& args, std::size_t* bytes);
// Sorts every row ascending by its keys, stably. keys[*result] and indices[*result] hold the answer.
Status RowSort(const RowSortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream,
               int* result);

// Segments of any lengths, given as segments + 1 offsets on the device (int64, 0 first, never
// decreasing, count last): segment s is keys [offsets[s], offsets[s+1]). Positions: the sort writes each
// key's position in the whole array (0..count-1) and carries it.
struct SegmentSortArgs {
  KeyWidth key_width = KeyWidth::k32;
  std::size_t count = 0;      // at most 2^31 - 1
  std::size_t segments = 0;
  const std::int64_t* offsets = nullptr;  // device, segments + 1 entries
  void* keys[2] = {nullptr, nullptr};     // keys[0]: input; keys[1]: scratch
  void* indices[2] = {nullptr, nullptr};  // uint32_t scratch pairs
};

Status SegmentSortTempBytes(const SegmentSortArgs& args, std::size_t* bytes);
// Sorts every segment ascending by its keys, stably. keys[*result] and indices[*result] hold the answer.
Status SegmentSort(const SegmentSortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream,
                   int* result);
// Positions in the whole array -> positions within their segment, in place (positions[i] -= the start
// of the segment holding i), for a segmented sort's answer.
Status SegmentRelativePositionsAsync(std::uint32_t* positions, const std::int64_t* offsets, std::size_t segments,
                                     const Stream& stream);

}  // namespace gpusort::kernels
