// Stable sort of many equal-length rows of ordered key bits at once (CUB DeviceSegmentedSort), each key
// carrying its position within its row. Used for TopK over rows and for batches of small arrays.
#pragma once

#include <cstddef>

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

}  // namespace gpusort::kernels
