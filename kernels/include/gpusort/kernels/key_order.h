// The service's one key order, defined once for the host and the device: a map from a key's bits to
// unsigned bits whose natural order is the key order. Integers: flip the sign bit. Floats: IEEE 754
// totalOrder (-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN, NaNs by payload), the classic
// radix-sort transform: negative floats have all bits flipped, others only the sign bit. Two keys are
// equal in this order exactly when their bit patterns are equal.
//
// Plain C++ (the host: server/core/key_order.h gives it typed keys; the CPU backend sorts with it)
// that nvcc also compiles for the device (kernels/src/key_transform.cu), so the CPU and the GPU cannot
// disagree on an order. No CUDA header and no CUDA type: it is part of the kernels' public API and of
// gpusort_core, which builds without CUDA (target gpusort_key_order).
#pragma once

#if defined(__CUDACC__)
#define GPUSORT_HOST_DEVICE __host__ __device__
#else
#define GPUSORT_HOST_DEVICE
#endif

namespace gpusort::kernels {

// How a key's bits are read: as an unsigned integer, a two's-complement integer or an IEEE 754 float.
enum class KeyKind { kUnsigned, kSigned, kFloat };

// U: the key's bits as an unsigned integer of its width (uint32_t or uint64_t).
template <typename U, KeyKind Kind>
GPUSORT_HOST_DEVICE constexpr U OrderedBits(U bits) {
  constexpr U kSign = U{1} << (sizeof(U) * 8 - 1);
  if constexpr (Kind == KeyKind::kFloat) {
    return (bits & kSign) ? static_cast<U>(~bits) : static_cast<U>(bits | kSign);
  } else if constexpr (Kind == KeyKind::kSigned) {
    return static_cast<U>(bits ^ kSign);
  } else {
    return bits;
  }
}

// The inverse: a key's bits from its ordered bits.
template <typename U, KeyKind Kind>
GPUSORT_HOST_DEVICE constexpr U KeyBitsFromOrdered(U ordered) {
  constexpr U kSign = U{1} << (sizeof(U) * 8 - 1);
  if constexpr (Kind == KeyKind::kFloat) {
    return (ordered & kSign) ? static_cast<U>(ordered ^ kSign) : static_cast<U>(~ordered);
  } else if constexpr (Kind == KeyKind::kSigned) {
    return static_cast<U>(ordered ^ kSign);
  } else {
    return ordered;
  }
}

}  // namespace gpusort::kernels
