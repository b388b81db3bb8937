// How the RADIX_SELECT top-k kernels (top_k_radix_select.cuh) visit a row or a candidate buffer with
// whole warps, and append the items they keep to an unordered output with few atomics.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gpusort::kernels::radix_select {

inline constexpr int kVectorsPerLane = 4;  // 16-byte loads in flight per lane and step
inline constexpr int kStage = 128;         // appends a warp gathers in shared memory before one atomic

template <typename Key, bool kStreaming>
__device__ __forceinline__ uint4 LoadVector(const uint4* p) {
  if constexpr (kStreaming) return __ldcs(p);  // read once: evict first from L2
  return __ldg(p);
}

template <typename Key>
__device__ __forceinline__ Key Unpack(const uint4& v, int e) {
  if constexpr (sizeof(Key) == 2) {  // little-endian: element 2w is word w's low half
    const std::uint32_t w = e / 2 == 0 ? v.x : e / 2 == 1 ? v.y : e / 2 == 2 ? v.z : v.w;
    return static_cast<Key>(w >> (16 * (e & 1)));
  } else if constexpr (sizeof(Key) == 4) {
    return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
  } else {
    return e == 0 ? (static_cast<Key>(v.y) << 32 | v.x) : (static_cast<Key>(v.w) << 32 | v.z);
  }
}

// Visits a row with a warp: body(keys, positions, valid) gets kItems keys per lane (valid: bitmask of
// the real ones) and is called by all 32 lanes together, so it may use warp collectives. The aligned
// middle of the row is read in 16-byte vectors, kVectorsPerLane per lane in flight; the unaligned head
// and tail (fewer than 2 * 16 bytes) go to warp 0. Warps [warp, warps) split the row.
// How a row's keys become ordered bits as they are read (TopKArgs::raw_keys): bits ^ flip, and for keys
// with the top bit set ^ negative as well (key_order.h: a float's sign flip, or all its bits when it is
// negative; a signed key's sign bit; complemented for the largest first). All zero: the row already
// holds ordered bits.
template <typename Key>
struct KeyDecode {
  Key flip = 0;
  Key negative = 0;
  __device__ __forceinline__ Key operator()(Key bits) const {
    const Key top = static_cast<Key>(Key{0} - static_cast<Key>(bits >> (sizeof(Key) * 8 - 1)));
    return static_cast<Key>(bits ^ flip ^ (negative & top));
  }
};

template <typename Key, bool kStreaming, typename Body>
__device__ __forceinline__ void ForEachRowStep(const Key* row, std::uint32_t n, std::uint32_t warp,
                                               std::uint32_t warps, KeyDecode<Key> decode, Body&& body) {
  constexpr int kPerVector = 16 / sizeof(Key);
  constexpr int kItems = kVectorsPerLane * kPerVector;
  constexpr std::uint32_t kStepVectors = 32 * kVectorsPerLane;
  const std::uint32_t lane = threadIdx.x & 31;
  std::uint32_t head = static_cast<std::uint32_t>(((16 - (reinterpret_cast<std::uintptr_t>(row) & 15)) & 15) / sizeof(Key));
  if (head > n) head = n;
  const std::uint32_t vectors = (n - head) / kPerVector;
  const std::uint32_t tail_start = head + vectors * kPerVector;
  const uint4* middle = reinterpret_cast<const uint4*>(row + head);
  const std::uint32_t stride = warps * kStepVectors;
  // One step ahead: the next step's vectors are in flight while this one is decoded and visited (the
  // visit's appends and warp votes otherwise leave the memory idle for the warp; issue 44 measured the
  // filter at 69% of the device's read bandwidth with loads issued only at the top of each step).
  uint4 v[kVectorsPerLane];
  auto load = [&](std::uint32_t at, uint4 (&into)[kVectorsPerLane]) {
#pragma unroll
    for (int j = 0; j < kVectorsPerLane; ++j) {
      const std::uint32_t index = at + j * 32 + lane;
      into[j] = index < vectors ? LoadVector<Key, kStreaming>(middle + index) : make_uint4(0, 0, 0, 0);
    }
  };
  if (warp * kStepVectors < vectors) load(warp * kStepVectors, v);
  for (std::uint32_t first = warp * kStepVectors; first < vectors; first += stride) {
    uint4 next[kVectorsPerLane];
    if (first + stride < vectors) load(first + stride, next);
    Key keys[kItems];
    std::uint32_t pos[kItems];
    std::uint32_t valid = 0;
#pragma unroll
    for (int j = 0; j < kVectorsPerLane; ++j) {
      const std::uint32_t index = first + j * 32 + lane;
#pragma unroll
      for (int e = 0; e < kPerVector; ++e) {
        keys[j * kPerVector + e] = decode(Unpack<Key>(v[j], e));
        pos[j * kPerVector + e] = head + index * kPerVector + e;
      }
      if (index < vectors) valid |= ((1u << kPerVector) - 1) << (j * kPerVector);
    }
    // Every step but a warp's last is whole: its body gets the mask as a constant, so that the body's
    // per-key checks of it fold away (the filter was bound by instructions as much as by memory: ncu,
    // issue 44, 80% of the SMs' issue rate at 78% of the read bandwidth).
    constexpr std::uint32_t kAllValid = kItems >= 32 ? 0xFFFFFFFFu : (1u << (kItems % 32)) - 1u;
    if (first + kStepVectors <= vectors) {
      body(keys, pos, kAllValid);
    } else {
      body(keys, pos, valid);
    }
#pragma unroll
    for (int j = 0; j < kVectorsPerLane; ++j) v[j] = next[j];
  }
  if (warp == 0) {
    const std::uint32_t tail = n - tail_start;
    Key key[1] = {0};
    std::uint32_t pos[1] = {0};
    std::uint32_t valid = 0;
    if (lane < head) {
      pos[0] = lane;
      valid = 1;
    } else if (lane - head < tail) {
      pos[0] = tail_start + lane - head;
      valid = 1;
    }
    if (valid) key[0] = decode(row[pos[0]]);
    body(key, pos, valid);
  }
}

// Visits the first `count` candidates with a warp, one per lane and call (same contract as above).
template <typename Key, typename Body>
__device__ __forceinline__ void ForEachCandidateStep(const Key* keys, const std::uint32_t* positions,
                                                     std::uint32_t count, std::uint32_t warp, std::uint32_t warps,
                                                     Body&& body) {
  const std::uint32_t lane = threadIdx.x & 31;
  for (std::uint32_t first = warp * 32; first < count; first += warps * 32) {
    const std::uint32_t i = first + lane;
    Key key[1] = {0};
    std::uint32_t pos[1] = {0};
    std::uint32_t valid = 0;
    if (i < count) {
      key[0] = keys[i];
      pos[0] = positions[i];
      valid = 1;
    }
    body(key, pos, valid);
  }
}

template <typename T>
__device__ __forceinline__ T WarpMin(T x) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    const T other = __shfl_xor_sync(0xFFFFFFFFu, x, d);
    x = other < x ? other : x;
  }
  return x;
}

// Appends (key, position) items to an unordered output with one atomic per kStage items: a warp gathers
// its items in shared memory and reserves room for all of them at once (appends are rare in the filter:
// one atomic per item would queue ~10^5 atomics on one address). Slots at or past `capacity` are counted
// but not written. All 32 lanes call every method together; `staged` is the same in every lane.
template <typename Key, typename OutPos>
struct WarpAppender {
  Key* stage_keys;        // this warp's kStage slots
  std::uint32_t* stage_pos;
  std::uint32_t* counter;
  Key* out_keys;
  OutPos* out_pos;
  std::uint32_t capacity;
  std::uint32_t staged = 0;

  __device__ __forceinline__ void Write(std::uint32_t slot, Key key, std::uint32_t pos) {
    if (slot < capacity) {
      out_keys[slot] = key;
      out_pos[slot] = static_cast<OutPos>(pos);
    }
  }

  __device__ __forceinline__ std::uint32_t Reserve(std::uint32_t items) {
    std::uint32_t base = 0;
    if ((threadIdx.x & 31) == 0) base = atomicAdd(counter, items);
    return __shfl_sync(0xFFFFFFFFu, base, 0);
  }

  __device__ __forceinline__ void Flush() {
    if (staged == 0) return;
    __syncwarp();
    const std::uint32_t base = Reserve(staged);
    for (std::uint32_t i = threadIdx.x & 31; i < staged; i += 32) Write(base + i, stage_keys[i], stage_pos[i]);
    staged = 0;
    __syncwarp();
  }

  template <int N>
  __device__ __forceinline__ void Append(const Key (&keys)[N], const std::uint32_t (&pos)[N], std::uint32_t take) {
    const std::uint32_t lane = threadIdx.x & 31;
    const std::uint32_t mine = __popc(take);
    std::uint32_t inclusive = mine;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const std::uint32_t other = __shfl_up_sync(0xFFFFFFFFu, inclusive, d);
      if (lane >= static_cast<std::uint32_t>(d)) inclusive += other;
    }
    const std::uint32_t total = __shfl_sync(0xFFFFFFFFu, inclusive, 31);
    if (total == 0) return;
    std::uint32_t at = inclusive - mine;
    if (staged + total > kStage) Flush();
    if (total > kStage) {  // more than the stage holds: straight to the output
      const std::uint32_t base = Reserve(total);
#pragma unroll
      for (int j = 0; j < N; ++j) {
        if ((take >> j) & 1u) Write(base + at++, keys[j], pos[j]);
      }
      return;
    }
#pragma unroll
    for (int j = 0; j < N; ++j) {
      if ((take >> j) & 1u) {
        stage_keys[staged + at] = keys[j];
        stage_pos[staged + at] = pos[j];
        ++at;
      }
    }
    staged += total;
    __syncwarp();
  }
};

}  // namespace gpusort::kernels::radix_select
