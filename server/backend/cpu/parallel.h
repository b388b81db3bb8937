// How the CPU backend splits work: a fixed number of contiguous chunks, run on TBB when there is more
// than one. Small inputs get a single chunk and run on the calling thread (no thread wake-up).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <utility>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include "server/core/tsan_hand_off.h"

namespace gpusort::cpu {

// Below this many elements everything runs on the calling thread.
inline constexpr std::size_t kParallelMinElements = std::size_t{1} << 16;
// No chunk smaller than this (a chunk's fixed cost is a few 256-entry histograms).
inline constexpr std::size_t kMinChunkElements = std::size_t{1} << 15;

// Chunks for n elements on `threads` threads: 1 (sequential) for small n, else up to 4 per thread so
// that a thread slowed by other work on the machine does not hold everyone up.
inline std::size_t ChunkCount(std::size_t n, int threads) {
  if (threads <= 1 || n < kParallelMinElements) return 1;
  return std::clamp<std::size_t>(n / kMinChunkElements, 1, static_cast<std::size_t>(threads) * 4);
}

// First element of chunk c of n elements split into `chunks` near-equal parts (c == chunks: n).
inline std::size_t ChunkBegin(std::size_t n, std::size_t chunks, std::size_t c) {
  return (n / chunks) * c + std::min(c, n % chunks);
}

// tbb::parallel_for(range, body, partitioner...), with its hand-offs told to ThreadSanitizer: what the
// caller did before happens before every body, and every body before what the caller does after. TBB
// orders both through its own atomics, which TSan cannot see (tsan_hand_off.h). Every parallel loop of
// the CPU backend goes through here.
template <typename Range, typename Body, typename... Partitioner>
void ParallelFor(const Range& range, const Body& body, Partitioner&&... partitioner) {
  char before = 0, after = 0;  // two distinct addresses for the two hand-offs
  TsanRelease(&before);
  tbb::parallel_for(
      range,
      [&](const Range& r) {
        TsanAcquire(&before);
        body(r);
        TsanRelease(&after);
      },
      std::forward<Partitioner>(partitioner)...);
  TsanAcquire(&after);
}

// Calls f(c) for every chunk c in [0, chunks); in parallel (one task per chunk) when chunks > 1.
template <typename F>
void ForEachChunk(std::size_t chunks, F&& f) {
  if (chunks <= 1) {
    if (chunks == 1) f(std::size_t{0});
    return;
  }
  ParallelFor(
      tbb::blocked_range<std::size_t>(0, chunks, 1),
      [&](const tbb::blocked_range<std::size_t>& r) {
        for (std::size_t c = r.begin(); c != r.end(); ++c) f(c);
      },
      tbb::simple_partitioner());
}

// Calls f(begin, end) over [0, n) split into ChunkCount(n, threads) ranges.
template <typename F>
void ForEachRange(std::size_t n, int threads, F&& f) {
  const std::size_t chunks = ChunkCount(n, threads);
  ForEachChunk(chunks, [&](std::size_t c) {
    f(ChunkBegin(n, chunks, c), ChunkBegin(n, chunks, c + 1));
  });
}

// memcpy of `bytes` bytes, split over threads when large.
inline void ParallelCopy(void* dst, const void* src, std::size_t bytes, int threads) {
  ForEachRange(bytes, threads, [&](std::size_t b, std::size_t e) {
    std::memcpy(static_cast<std::byte*>(dst) + b, static_cast<const std::byte*>(src) + b, e - b);
  });
}

}  // namespace gpusort::cpu
