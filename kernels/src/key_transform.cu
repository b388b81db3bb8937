// ToOrderedBitsAsync / FromOrderedBitsAsync: grid-stride, memory bound (a read and a write per key). The
// map itself is gpusort/kernels/key_order.h, the host's too.
#include "gpusort/kernels/key_transform.h"

#include <algorithm>
#include <type_traits>

#include "cuda_status.h"

namespace gpusort::kernels {
namespace {

unsigned Blocks(std::size_t items, int threads) {
  const std::size_t blocks = (items + threads - 1) / threads;
  return static_cast<unsigned>(blocks == 0 ? 1 : (blocks < 8192 ? blocks : 8192));
}

inline constexpr int kUnroll = 4;

// Keys S in -> ordered bits W out (W = S in place, or S zero-extended to 32 bits into another buffer);
// out null: the OR/AND fold alone; or_and null: the conversion alone.
template <typename S, typename W, KeyKind Kind>
__global__ void ToOrderedKernel(const S* in, W* out, std::size_t count, S flip, unsigned long long* or_and) {
  W or_bits = 0, and_bits = static_cast<W>(~W{0});
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  // kUnroll independent loads in flight per thread (a grid that fills the GPU once needs them to keep
  // enough bytes in flight), then the tail one at a time. Each key is read and written by one thread,
  // so in place is safe.
  for (; i + (kUnroll - 1) * stride < count; i += kUnroll * stride) {
    S keys[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) keys[u] = in[i + u * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const W o = static_cast<S>(OrderedBits<S, Kind>(keys[u]) ^ flip);
      if (out != nullptr) out[i + u * stride] = o;
      or_bits |= o;
      and_bits &= o;
    }
  }
  for (; i < count; i += stride) {
    const W o = static_cast<S>(OrderedBits<S, Kind>(in[i]) ^ flip);
    if (out != nullptr) out[i] = o;
    or_bits |= o;
    and_bits &= o;
  }
  if (or_and == nullptr) return;  // the same for every thread: no block is left short at the barrier below
  // Every lane reaches here, so the whole-warp shuffles are safe; one atomic per warp.
  using Lane = std::conditional_t<(sizeof(W) < 4), unsigned, W>;  // the shuffles' narrowest type
  for (int offset = 16; offset > 0; offset /= 2) {
    or_bits |= static_cast<W>(__shfl_xor_sync(0xFFFFFFFFu, static_cast<Lane>(or_bits), offset));
    and_bits &= static_cast<W>(__shfl_xor_sync(0xFFFFFFFFu, static_cast<Lane>(and_bits), offset));
  }
  // Then across the block's warps in shared memory, and one atomic pair per block: every atomic lands on
  // the same two words, and one pair per warp (131072 of them for 16M keys) cost more than the pass.
  __shared__ unsigned long long warp_or[32], warp_and[32];
  const unsigned warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  if ((threadIdx.x & 31) == 0) {
    // Zero-extended, as on the host: bits above the key's width never count as varying.
    warp_or[warp] = static_cast<unsigned long long>(or_bits);
    warp_and[warp] = static_cast<unsigned long long>(and_bits);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long block_or = 0, block_and = ~0ull;
    for (unsigned w = 0; w < warps; ++w) {
      block_or |= warp_or[w];
      block_and &= warp_and[w];
    }
    atomicOr(&or_and[0], block_or);
    atomicAnd(&or_and[1], block_and);
  }
}

template <typename S, typename W, KeyKind Kind>
__global__ void FromOrderedKernel(const W* in, S* out, std::size_t count, S flip) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < count; i += kUnroll * stride) {  // as ToOrderedKernel
    W bits[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) bits[u] = in[i + u * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      out[i + u * stride] = KeyBitsFromOrdered<S, Kind>(static_cast<S>(static_cast<S>(bits[u]) ^ flip));
    }
  }
  for (; i < count; i += stride) out[i] = KeyBitsFromOrdered<S, Kind>(static_cast<S>(static_cast<S>(in[i]) ^ flip));
}

template <typename S, typename W>
Status Forward(KeyKind kind, bool complement, const void* in, void* out, std::size_t count, std::uint64_t* or_and,
               cudaStream_t stream) {
  const S flip = complement ? static_cast<S>(~S{0}) : S{0};
  const auto* k = static_cast<const S*>(in);
  auto* o = static_cast<W*>(out);
  auto* acc = reinterpret_cast<unsigned long long*>(or_and);
  constexpr int kThreads = 256;
  // A grid that fills the GPU once (1024 blocks of 256 threads: about every thread an H100 holds) and
  // strides over the rest, so that the block-wide OR/AND folds stay few.
  const unsigned blocks = std::min(Blocks(count, kThreads), 1024u);
  switch (kind) {
    case KeyKind::kUnsigned:
      ToOrderedKernel<S, W, KeyKind::kUnsigned><<<blocks, kThreads, 0, stream>>>(k, o, count, flip, acc);
      break;
    case KeyKind::kSigned:
      ToOrderedKernel<S, W, KeyKind::kSigned><<<blocks, kThreads, 0, stream>>>(k, o, count, flip, acc);
      break;
    case KeyKind::kFloat:
      ToOrderedKernel<S, W, KeyKind::kFloat><<<blocks, kThreads, 0, stream>>>(k, o, count, flip, acc);
      break;
  }
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("ordered-bits kernel");
  return Status::Ok();
}

template <typename S, typename W>
Status Backward(KeyKind kind, bool complement, const void* in, void* out, std::size_t count, cudaStream_t stream) {
  // Unsigned keys of their own width, not complemented, are their ordered bits: in place there is
  // nothing to do (a pass over 64 MiB that writes what it read costs about 0.05 ms on an H100).
  if (std::is_same_v<S, W> && kind == KeyKind::kUnsigned && !complement && in == out) return Status::Ok();
  const S flip = complement ? static_cast<S>(~S{0}) : S{0};
  const auto* k = static_cast<const W*>(in);
  auto* o = static_cast<S*>(out);
  constexpr int kThreads = 256;
  const unsigned blocks = Blocks(count, kThreads);
  switch (kind) {
    case KeyKind::kUnsigned:
      FromOrderedKernel<S, W, KeyKind::kUnsigned><<<blocks, kThreads, 0, stream>>>(k, o, count, flip);
      break;
    case KeyKind::kSigned:
      FromOrderedKernel<S, W, KeyKind::kSigned><<<blocks, kThreads, 0, stream>>>(k, o, count, flip);
      break;
    case KeyKind::kFloat:
      FromOrderedKernel<S, W, KeyKind::kFloat><<<blocks, kThreads, 0, stream>>>(k, o, count, flip);
      break;
  }
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("key-bits kernel");
  return Status::Ok();
}

}  // namespace

Status ToOrderedBitsAsync(KeyWidth width, KeyKind kind, bool complement, void* keys, std::size_t count,
                          std::uint64_t* or_and, const Stream& stream) {
  return ToOrderedBitsCopyAsync(width, kind, complement, keys, keys, count, or_and, stream);
}

Status ToOrderedBitsCopyAsync(KeyWidth width, KeyKind kind, bool complement, const void* in, void* out,
                              std::size_t count, std::uint64_t* or_and, const Stream& stream) {
  auto s = static_cast<cudaStream_t>(stream.native());
  switch (width) {
    case KeyWidth::k16: return Forward<std::uint16_t, std::uint16_t>(kind, complement, in, out, count, or_and, s);
    case KeyWidth::k32: return Forward<std::uint32_t, std::uint32_t>(kind, complement, in, out, count, or_and, s);
    default: return Forward<std::uint64_t, std::uint64_t>(kind, complement, in, out, count, or_and, s);
  }
}

Status FromOrderedBitsAsync(KeyWidth width, KeyKind kind, bool complement, void* keys, std::size_t count,
                            const Stream& stream) {
  return FromOrderedBitsCopyAsync(width, kind, complement, keys, keys, count, stream);
}

Status FromOrderedBitsCopyAsync(KeyWidth width, KeyKind kind, bool complement, const void* in, void* out,
                                std::size_t count, const Stream& stream) {
  auto s = static_cast<cudaStream_t>(stream.native());
  switch (width) {
    case KeyWidth::k16: return Backward<std::uint16_t, std::uint16_t>(kind, complement, in, out, count, s);
    case KeyWidth::k32: return Backward<std::uint32_t, std::uint32_t>(kind, complement, in, out, count, s);
    default: return Backward<std::uint64_t, std::uint64_t>(kind, complement, in, out, count, s);
  }
}

Status WidenToOrderedBitsAsync(std::size_t key_bytes, KeyKind kind, bool complement, const void* narrow,
                               std::uint32_t* wide, std::size_t count, std::uint64_t* or_and, const Stream& stream) {
  auto s = static_cast<cudaStream_t>(stream.native());
  switch (key_bytes) {
    case 1: return Forward<std::uint8_t, std::uint32_t>(kind, complement, narrow, wide, count, or_and, s);
    case 2: return Forward<std::uint16_t, std::uint32_t>(kind, complement, narrow, wide, count, or_and, s);
    default: return {StatusCode::kInvalidArgument, "narrow keys are 1 or 2 bytes"};
  }
}

Status NarrowFromOrderedBitsAsync(std::size_t key_bytes, KeyKind kind, bool complement, const std::uint32_t* wide,
                                  void* narrow, std::size_t count, const Stream& stream) {
  auto s = static_cast<cudaStream_t>(stream.native());
  switch (key_bytes) {
    case 1: return Backward<std::uint8_t, std::uint32_t>(kind, complement, wide, narrow, count, s);
    case 2: return Backward<std::uint16_t, std::uint32_t>(kind, complement, wide, narrow, count, s);
    default: return {StatusCode::kInvalidArgument, "narrow keys are 1 or 2 bytes"};
  }
}

}  // namespace gpusort::kernels
