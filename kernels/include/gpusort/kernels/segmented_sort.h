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

// Segments of any lengths, given as segments + 1 offsets (0 first, never decreasing, count last): segment
// s is keys [offsets[s], offsets[s+1]). Segments of up to max_tile_length keys (at most
// kBitonicRowsMaxLength) sort as bitonic tiles by (key, position), one launch per tile size, the longer
// ones by CUB's segmented sort: stable either way. Positions: the sort writes each key's position in
// the whole array (0..count-1) and carries it.
//
// The host plans the launches once, from its copy of the offsets (one pass: how many segments take
// each tile size), before any work is queued; the device then sorts those offsets without waiting on
// the host.
inline constexpr int kMaxTileClass = 12;  // tiles of 2^1 .. 2^12 keys
struct SegmentSortPlan {
  std::size_t segments = 0, count = 0, max_tile_length = 0;
  std::size_t tiles[kMaxTileClass + 1] = {};  // segments sorted as tiles of 2^c keys
  std::size_t first[kMaxTileClass + 1] = {};  // where class c's begin among the tile segments
  std::size_t tile_segments = 0, long_segments = 0;
};
// max_tile_length: 0 sends every segment to CUB. The offsets are read during the call only.
Status PlanSegmentSort(const std::uint64_t* host_offsets, std::size_t segments, std::size_t max_tile_length,
                       SegmentSortPlan* plan);

struct SegmentSortArgs {
  KeyWidth key_width = KeyWidth::k32;
  std::size_t count = 0;      // at most 2^31 - 1
  std::size_t segments = 0;
  const std::int64_t* offsets = nullptr;   // device, segments + 1 entries
  const SegmentSortPlan* plan = nullptr;   // PlanSegmentSort of the same offsets
  void* keys[2] = {nullptr, nullptr};     // keys[0]: input (left as it is); keys[1]: the answer
  void* indices[2] = {nullptr, nullptr};  // uint32_t: [0] scratch, [1] the answer
};

Status SegmentSortTempBytes(const SegmentSortArgs& args, std::size_t* bytes);
// Sorts every segment ascending by its keys, stably, from keys[0] into keys[1] (indices likewise);
// *result is 1.
Status SegmentSort(const SegmentSortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream,
                   int* result);

// Positions in the whole array -> positions within their segment, in place (positions[i] -= the start
// of the segment holding i), for a segmented sort's answer.
Status SegmentRelativePositionsAsync(std::uint32_t* positions, const std::int64_t* offsets, std::size_t segments,
                                     const Stream& stream);

}  // namespace gpusort::kernels
