// What the comparison-sort kernel tests share (kernels/comparison_sorts.h): run one of the kernels on
// ordered key bits through the kernels' own memory and stream API, and the answer it must give, which
// is std::stable_sort's (with positions, the kernels compare (key, position) pairs, so any correct
// algorithm lands exactly there). Skips when no GPU is usable.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"
#include "tests/gpu/test_max_keys.h"
#include "tests/support/inputs.h"

namespace gpusort::testing {

// One device, one stream and the pool, for the whole test binary; null when no GPU is usable.
struct KernelDevice {
  kernels::Stream stream;
  kernels::DeviceMemoryPool pool;
};

inline KernelDevice* Device() {
  static KernelDevice* device = []() -> KernelDevice* {
    std::string why;
    if (kernels::CountDevices(&why) == 0) return nullptr;
    auto* d = new KernelDevice;
    if (!kernels::UseDevice(0).ok() || !kernels::Stream::Create(&d->stream).ok() ||
        !kernels::DeviceMemoryPool::Create(0, &d->pool).ok()) {
      return nullptr;
    }
    return d;
  }();
  return device;
}

#define SKIP_WITHOUT_KERNEL_DEVICE()                                                      \
  do {                                                                                    \
    if (::gpusort::testing::Device() == nullptr) GTEST_SKIP() << "no usable GPU";         \
  } while (0)

template <typename Key>
struct KeySortResult {
  kernels::Status status;
  std::vector<Key> keys;
  std::vector<std::uint32_t> positions;  // empty unless asked for
};

// A whole-array sort: XTempBytes then X, as comparison_sorts.h describes.
using KeySortFn = std::function<kernels::Status(const kernels::KeySortArgs&, void*, std::size_t,
                                                const kernels::Stream&)>;
using KeySortTempFn = std::function<kernels::Status(const kernels::KeySortArgs&, std::size_t*)>;

template <typename Key>
constexpr kernels::KeyWidth WidthOf() {
  return sizeof(Key) == 2 ? kernels::KeyWidth::k16 : sizeof(Key) == 4 ? kernels::KeyWidth::k32 : kernels::KeyWidth::k64;
}

// Copies `keys` to the device, sorts them there and copies the answer back. Positions are poisoned
// first, so that every one must be written.
template <typename Key>
KeySortResult<Key> RunKeySort(const KeySortTempFn& temp_bytes_of, const KeySortFn& sort,
                              const std::vector<Key>& keys, bool with_positions) {
  KernelDevice& d = *Device();
  KeySortResult<Key> out;
  const std::size_t n = keys.size();
  kernels::KeySortArgs args;
  args.key_width = WidthOf<Key>();
  args.count = n;
  kernels::DeviceAllocation key_buffer, position_buffer, temp;
  auto check = [&](kernels::Status s) {
    if (out.status.ok() && !s.ok()) out.status = s;
    return s.ok();
  };
  if (!check(d.pool.Allocate(std::max<std::size_t>(1, n * sizeof(Key)), d.stream, &key_buffer))) return out;
  args.keys = key_buffer.data();
  if (with_positions) {
    if (!check(d.pool.Allocate(std::max<std::size_t>(1, n * 4), d.stream, &position_buffer))) return out;
    args.positions = position_buffer.as<std::uint32_t>();
    std::vector<std::uint32_t> poison(n, 0xDEADBEEF);
    if (!check(kernels::CopyToDeviceAsync(args.positions, poison.data(), n * 4, d.stream))) return out;
    if (!check(d.stream.Synchronize())) return out;
  }
  std::size_t temp_bytes = 0;
  if (!check(temp_bytes_of(args, &temp_bytes))) return out;
  if (!check(d.pool.Allocate(std::max<std::size_t>(1, temp_bytes), d.stream, &temp))) return out;
  if (!check(kernels::CopyToDeviceAsync(args.keys, keys.data(), n * sizeof(Key), d.stream))) return out;
  if (!check(sort(args, temp.data(), temp_bytes, d.stream))) return out;
  out.keys.resize(n);
  if (!check(kernels::CopyToHostAsync(out.keys.data(), args.keys, n * sizeof(Key), d.stream))) return out;
  if (with_positions) {
    out.positions.resize(n);
    if (!check(kernels::CopyToHostAsync(out.positions.data(), args.positions, n * 4, d.stream))) return out;
  }
  check(d.stream.Synchronize());
  return out;
}

// The answer: keys ascending, and the stable permutation.
template <typename Key>
KeySortResult<Key> ReferenceKeySort(const std::vector<Key>& keys, bool with_positions) {
  KeySortResult<Key> out;
  std::vector<std::uint32_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return keys[a] < keys[b]; });
  out.keys.reserve(keys.size());
  for (std::uint32_t i : order) out.keys.push_back(keys[i]);
  if (with_positions) out.positions = std::move(order);
  return out;
}

// Sorts `keys` with one kernel and expects the reference answer: with positions, std::stable_sort's
// keys and permutation; keys alone, std::sort's keys (any correct sort's answer, and cheaper to make).
template <typename Key>
void ExpectKeySortMatchesReference(const KeySortTempFn& temp_bytes_of, const KeySortFn& sort,
                                   const std::vector<Key>& keys, bool with_positions) {
  if (OverTestMaxKeys(keys.size())) return;
  const KeySortResult<Key> got = RunKeySort(temp_bytes_of, sort, keys, with_positions);
  ASSERT_TRUE(got.status.ok()) << got.status.message();
  if (!with_positions) {
    std::vector<Key> want = keys;
    std::sort(want.begin(), want.end());
    ASSERT_EQ(got.keys, want);
    ASSERT_TRUE(got.positions.empty());
    return;
  }
  const KeySortResult<Key> want = ReferenceKeySort(keys, true);
  ASSERT_EQ(got.keys, want.keys);
  ASSERT_EQ(got.positions, want.positions);
}

// Sizes every whole-array kernel is checked at (the list), up to `max_count` and
// GPUSORT_TEST_MAX_KEYS.
inline std::vector<std::size_t> KernelTestSizes(std::size_t max_count) {
  std::vector<std::size_t> sizes;
  for (std::size_t n : {0, 1, 2, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4095, 4096, (1 << 20) + 1}) {
    if (n <= max_count && n <= TestMaxKeys()) sizes.push_back(n);
  }
  return sizes;
}

// Runs `sort` on every pattern of tests/support/inputs.h at every size up to max_count, both widths,
// with and without positions, and expects std::stable_sort's answer each time.
inline void ExpectSortsLikeStableSort(const KeySortTempFn& temp_bytes_of, const KeySortFn& sort,
                                      std::size_t max_count) {
  auto one = [&](auto key_tag) {
    using Key = decltype(key_tag);
    for (Pattern pattern : kAllPatterns) {
      for (std::size_t n : KernelTestSizes(max_count)) {
        for (bool with_positions : {false, true}) {
          SCOPED_TRACE(PatternName(pattern) + " n=" + std::to_string(n) + " bits=" + std::to_string(sizeof(Key) * 8) +
                       (with_positions ? " positions" : ""));
          ExpectKeySortMatchesReference(temp_bytes_of, sort, MakeInput<Key>(pattern, n, n + 17), with_positions);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  };
  one(std::uint32_t{});
  one(std::uint64_t{});
}

}  // namespace gpusort::testing
