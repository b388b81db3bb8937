// ToOrderedBitsAsync / FromOrderedBitsAsync: grid-stride, memory bound (a read and a write per key). The
// map itself is gpusort/kernels/key_order.h, the host's too.
#include "gpusort/kernels/key_transform.h"

#include <type_traits>

#include "cuda_status.h"

namespace gpusort::kernels {
namespace {

unsigned Blocks(std::size_t items, int threads) {
  const std::size_t blocks = (items + threads - 1) / threads;
  return static_cast<unsigned>(blocks == 0 ? 1 : (blocks < 8192 ? blocks : 8192));
}

template <typename U, KeyKind Kind>
__global__ void ToOrderedKernel(U* keys, std::size_t count, U flip, unsigned long long* or_and) {
  U or_bits = 0, and_bits = static_cast<U>(~U{0});
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const U o = static_cast<U>(OrderedBits<U, Kind>(keys[i]) ^ flip);
    keys[i] = o;
    or_bits |= o;
    and_bits &= o;
  }
  // Every lane reaches here, so the whole-warp shuffles are safe; one atomic per warp.
  for (int offset = 16; offset > 0; offset /= 2) {
    or_bits |= __shfl_xor_sync(0xFFFFFFFFu, or_bits, offset);
    and_bits &= __shfl_xor_sync(0xFFFFFFFFu, and_bits, offset);
  }
  if ((threadIdx.x & 31) == 0) {
    // Zero-extended, as on the host: bits above the key's width never count as varying.
    atomicOr(&or_and[0], static_cast<unsigned long long>(or_bits));
    atomicAnd(&or_and[1], static_cast<unsigned long long>(and_bits));
  }
}

template <typename U, KeyKind Kind>
__global__ void FromOrderedKernel(U* keys, std::size_t count, U flip) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    keys[i] = KeyBitsFromOrdered<U, Kind>(static_cast<U>(keys[i] ^ flip));
  }
}

template <typename U>
Status Forward(KeyKind kind, bool complement, void* keys, std::size_t count, std::uint64_t* or_and,
               cudaStream_t stream) {
  const U flip = complement ? static_cast<U>(~U{0}) : U{0};
  auto* k = static_cast<U*>(keys);
  auto* acc = reinterpret_cast<unsigned long long*>(or_and);
  constexpr int kThreads = 256;
  switch (kind) {
    case KeyKind::kUnsigned:
      ToOrderedKernel<U, KeyKind::kUnsigned><<<Blocks(count, kThreads), kThreads, 0, stream>>>(k, count, flip, acc);
      break;
    case KeyKind::kSigned:
      ToOrderedKernel<U, KeyKind::kSigned><<<Blocks(count, kThreads), kThreads, 0, stream>>>(k, count, flip, acc);
      break;
    case KeyKind::kFloat:
      ToOrderedKernel<U, KeyKind::kFloat><<<Blocks(count, kThreads), kThreads, 0, stream>>>(k, count, flip, acc);
      break;
  }
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("ordered-bits kernel");
  return Status::Ok();
}

template <typename U>
Status Backward(KeyKind kind, bool complement, void* keys, std::size_t count, cudaStream_t stream) {
  const U flip = complement ? static_cast<U>(~U{0}) : U{0};
  auto* k = static_cast<U*>(keys);
  constexpr int kThreads = 256;
  switch (kind) {
    case KeyKind::kUnsigned:
      FromOrderedKernel<U, KeyKind::kUnsigned><<<Blocks(count, kThreads), kThreads, 0, stream>>>(k, count, flip);
      break;
    case KeyKind::kSigned:
      FromOrderedKernel<U, KeyKind::kSigned><<<Blocks(count, kThreads), kThreads, 0, stream>>>(k, count, flip);
      break;
    case KeyKind::kFloat:
      FromOrderedKernel<U, KeyKind::kFloat><<<Blocks(count, kThreads), kThreads, 0, stream>>>(k, count, flip);
      break;
  }
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("key-bits kernel");
  return Status::Ok();
}

}  // namespace

Status ToOrderedBitsAsync(KeyWidth width, KeyKind kind, bool complement, void* keys, std::size_t count,
                          std::uint64_t* or_and, const Stream& stream) {
  auto s = static_cast<cudaStream_t>(stream.native());
  return width == KeyWidth::k32 ? Forward<std::uint32_t>(kind, complement, keys, count, or_and, s)
                                : Forward<std::uint64_t>(kind, complement, keys, count, or_and, s);
}

Status FromOrderedBitsAsync(KeyWidth width, KeyKind kind, bool complement, void* keys, std::size_t count,
                            const Stream& stream) {
  auto s = static_cast<cudaStream_t>(stream.native());
  return width == KeyWidth::k32 ? Backward<std::uint32_t>(kind, complement, keys, count, s)
                                : Backward<std::uint64_t>(kind, complement, keys, count, s);
}

}  // namespace gpusort::kernels
