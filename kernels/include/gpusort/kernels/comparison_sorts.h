// The comparison sorts gpusort grew from, as real kernels: Merge Path merge sort, bitonic sort (whole
// arrays and many rows at once), odd-even transposition sort and quicksort with dynamic parallelism.
//
// Like RadixSort (radix_sort.h) they sort order-preserving key bits ascending: the server maps every
// dtype and order to unsigned bits first, so each algorithm agrees bit for bit with the CPU backend.
//
// Positions: when `positions` is set, the sort writes each key's input position (0..count-1, or
// 0..row_length-1 per row) and moves it with its key, and keys are compared together with their
// positions. No two (key, position) pairs are equal, so every algorithm gives exactly the answer of a
// stable sort, whatever its network does with ties.
//
// Every call is asynchronous on `stream`; temporary storage comes from the caller: ask XTempBytes first
// (the bytes depend only on the key width, count and whether positions are set), then call X with at
// least that much. Keys and positions are sorted in place.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"

namespace gpusort::kernels {

struct KeySortArgs {
  KeyWidth key_width = KeyWidth::k32;
  std::size_t count = 0;               // at most 2^31 - 1
  void* keys = nullptr;                // count uint32_t or uint64_t ordered bits, sorted in place
  std::uint32_t* positions = nullptr;  // null: keys only; else count uint32_t, written by the sort
};

// MERGE: a block sorts a tile in shared memory, then global merge passes in which every block finds its
// share of two sorted runs with one Merge Path search. Stable.
Status MergeSortTempBytes(const KeySortArgs& args, std::size_t* bytes);
Status MergeSort(const KeySortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream);

// BITONIC: a bitonic network for any count (padded with sentinels to a power of two): shared-memory
// stages for the inner steps, global ones for the outer.
Status BitonicSortTempBytes(const KeySortArgs& args, std::size_t* bytes);
Status BitonicSort(const KeySortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream);

// ODD_EVEN: odd-even transposition sort of one array in one block's shared memory. O(n^2) work, so it
// takes at most kOddEvenMaxKeys keys (more: kInvalidArgument).
inline constexpr std::size_t kOddEvenMaxKeys = 4096;
Status OddEvenSortTempBytes(const KeySortArgs& args, std::size_t* bytes);
Status OddEvenSort(const KeySortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream);

// QUICKSORT: blocks partition large ranges in parallel around a sampled pivot, each range's children
// launched from the device (dynamic parallelism); small ranges finish in shared memory; a depth limit
// hands what is left to a non-recursive sort, so no input goes quadratic.
Status QuicksortTempBytes(const KeySortArgs& args, std::size_t* bytes);
Status Quicksort(const KeySortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream);

// Many equal-length rows, each sorted on its own (segmented). Positions are row-relative.
struct KeyRowsArgs {
  KeyWidth key_width = KeyWidth::k32;
  std::size_t rows = 0;
  std::size_t row_length = 0;          // rows * row_length at most 2^31 - 1
  void* keys = nullptr;                // row-major, sorted in place
  std::uint32_t* positions = nullptr;  // null: keys only; else rows * row_length uint32_t
};

// BITONIC over rows: one block per row up to kBitonicRowsMaxLength keys per row.
inline constexpr std::size_t kBitonicRowsMaxLength = 4096;
Status BitonicSortRowsTempBytes(const KeyRowsArgs& args, std::size_t* bytes);
Status BitonicSortRows(const KeyRowsArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream);

}  // namespace gpusort::kernels
