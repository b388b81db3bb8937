// BENCHMARK ONLY, never served: the quicksort of the original write-up (the classic CUDA sample
// "cdpSimpleQuicksort"), kept as a row of the benchmark table to compare QUICKSORT
// (comparison_sorts.h) with. One single-thread kernel per partition: it partitions its range around
// the middle key and launches a one-thread child for each side, to depth 16; ranges of at most 33 keys,
// and everything at depth 16, are sorted by that one thread. The write-up measured 3.26 s for 1M keys.
//
// Adapted to CUDA 12+ dynamic parallelism: children are fire-and-forget launches (device-side
// cudaDeviceSynchronize is gone). Made safe, without changing what is measured on random keys: a child
// launch the device runtime refuses (its launch pool is full) is sorted by the parent thread instead of
// being lost, and a range still longer than 33 keys at depth 16 is heap-sorted rather than
// selection-sorted, so a bad input cannot take hours.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"

namespace gpusort::kernels {

// Sorts `count` (at most 2^31 - 1) uint32_t keys ascending in place, asynchronously on `stream`.
Status WriteupQuicksort(std::uint32_t* keys, std::size_t count, const Stream& stream);

}  // namespace gpusort::kernels
