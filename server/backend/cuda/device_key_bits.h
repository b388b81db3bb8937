// How wide a key's ordered bits are on the device. The kernels sort and select 32- and 64-bit
// ordered bits; a 16- or 8-bit key travels there as its own ordered bits zero-extended to 32, which
// keeps the order (the high bits are zero in every key, so they never vary and the radix passes skip
// them) and lets every kernel serve the narrow dtypes unchanged. Host copies stay narrow: keys widen
// as they cross (on the host for staged copies, on the device for DMA'd ones) and narrow on the way
// back.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "server/core/dtype.h"

namespace gpusort {

constexpr std::size_t DeviceKeyBytes(DType dtype) { return std::max<std::size_t>(4, ElementSize(dtype)); }

template <typename T>
using DeviceBitsType = std::conditional_t<sizeof(T) <= 4, std::uint32_t, std::uint64_t>;

}  // namespace gpusort
