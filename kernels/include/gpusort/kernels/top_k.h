// Top-k selection kernels: the k first elements of each row in (key, position) order, without sorting
// the row.
//
// Like the sorts (radix_sort.h, comparison_sorts.h) they work on order-preserving key bits and select
// the k SMALLEST: the server maps every dtype to unsigned bits whose ascending order is the requested
// order (largest-first complements them), so one kernel serves every dtype, order and NaN rule, and the
// answer agrees bit for bit with the CPU backend.
//
// Exactly which k: rank a row's elements by (key bits, position) ascending and take the first k. Equal
// keys are all kept (no deduplication) and among equal keys the earlier position wins: this is the
// proto's tie rule, and it equals the first k of a stable sort of the row.
//
// Output: row r's results are entries [r*k, (r+1)*k) of out_keys (ordered bits) and out_positions
// (positions within the row). With `sorted` they come in rank order; without it they are the same k
// elements in an unspecified order (which may save a sort of the k). Either output may be null.
//
// Every call is asynchronous on `stream`; temporary storage comes from the caller: ask XTempBytes first
// (it depends only on the key width, rows, row_length, k and sorted), then call X with at least that
// much. The input keys are not modified.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpusort/kernels/key_order.h"
#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"

namespace gpusort::kernels {

struct TopKArgs {
  KeyWidth key_width = KeyWidth::k32;
  std::size_t rows = 1;
  std::size_t row_length = 0;              // rows * row_length at most 2^31 - 1
  std::size_t k = 0;                       // 1 <= k <= row_length
  bool sorted = true;                      // results in rank order
  const void* keys = nullptr;              // rows * row_length uint32_t or uint64_t ordered bits, row-major
  void* out_keys = nullptr;                // null, or rows * k ordered bits of the same width
  std::int64_t* out_positions = nullptr;   // null, or rows * k positions within the row
  // RADIX_SELECT only (the others refuse it): `keys` are the caller's own keys of `raw_kind`, 16, 32 or
  // 64 bits, not ordered bits; the kernel turns each into its ordered bits (complemented when
  // `raw_complement`: largest first) as it reads it, so keys lying in a caller's memory are read where
  // they are and never copied. out_keys still receives ordered bits.
  bool raw_keys = false;
  KeyKind raw_kind = KeyKind::kUnsigned;
  bool raw_complement = false;
};

// RADIX_SELECT: histogram passes over the key bits, each narrowing the candidates to the one digit
// bucket that holds the k-th element, reading the full input as few times as it can; then a gather of
// everything ranked before the k-th element plus the earliest of its equals, and (if sorted) a sort of
// the k. Any k and any rows, 16-, 32- and 64-bit keys; built for long rows.
Status RadixSelectTopKTempBytes(const TopKArgs& args, std::size_t* bytes);
Status RadixSelectTopK(const TopKArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream);

// SMALL_K: selection in registers and shared memory (a warp or a block per row, or per slice of a long
// row followed by a merge of the slices' candidates), for k up to kSmallTopKMaxK. Any rows and row
// length; built for many rows and for small k.
inline constexpr std::size_t kSmallTopKMaxK = 1024;
Status SmallTopKTempBytes(const TopKArgs& args, std::size_t* bytes);
Status SmallTopK(const TopKArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream);

// THREAD_LISTS: the method of the write-up gpusort grew from, repaired: each thread keeps a sorted
// list of the best k it has seen, a block merges its threads' lists, and a second pass merges the
// blocks' lists. The write-up dropped repeated keys; this keeps them and applies the tie rule. Kept so
// that users can compare it; k up to kThreadListsMaxK (the lists live in registers / local memory).
inline constexpr std::size_t kThreadListsMaxK = 128;
Status ThreadListsTopKTempBytes(const TopKArgs& args, std::size_t* bytes);
Status ThreadListsTopK(const TopKArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream);

}  // namespace gpusort::kernels
