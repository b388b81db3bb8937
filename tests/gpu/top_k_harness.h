// What the top-k kernel tests share (kernels/top_k.h): run one selection kernel on ordered key bits
// through the kernels' memory and stream API, and the answer it must give: per row, the first k of a
// stable sort by key (equal keys all kept, the earlier position first). Unsorted answers must hold the
// same k (key, position) pairs in any order. Skips when no GPU is usable (key_sort_harness.h's device).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <utility>
#include <vector>

#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/top_k.h"
#include "tests/gpu/key_sort_harness.h"
#include "tests/gpu/test_max_keys.h"

namespace gpusort::testing {

using TopKFn = std::function<kernels::Status(const kernels::TopKArgs&, void*, std::size_t, const kernels::Stream&)>;
using TopKTempFn = std::function<kernels::Status(const kernels::TopKArgs&, std::size_t*)>;

template <typename Key>
struct TopKResult {
  kernels::Status status;
  std::vector<Key> keys;                 // rows * k
  std::vector<std::int64_t> positions;   // rows * k
};

// Copies `keys` (rows x row_length, row-major) to the device, selects, and copies both outputs back.
// Outputs are poisoned first, so that every entry must be written; the input is checked unchanged.
template <typename Key>
TopKResult<Key> RunTopK(const TopKTempFn& temp_bytes_of, const TopKFn& select, const std::vector<Key>& keys,
                        std::size_t rows, std::size_t k, bool sorted) {
  KernelDevice& d = *Device();
  TopKResult<Key> out;
  const std::size_t n = keys.size(), results = rows * k;
  kernels::TopKArgs args;
  args.key_width = WidthOf<Key>();
  args.rows = rows;
  args.row_length = rows == 0 ? 0 : n / rows;
  args.k = k;
  args.sorted = sorted;
  kernels::DeviceAllocation input, out_keys, out_positions, temp;
  auto check = [&](kernels::Status s) {
    if (out.status.ok() && !s.ok()) out.status = s;
    return s.ok();
  };
  if (!check(d.pool.Allocate(std::max<std::size_t>(1, n * sizeof(Key)), d.stream, &input))) return out;
  if (!check(d.pool.Allocate(std::max<std::size_t>(1, results * sizeof(Key)), d.stream, &out_keys))) return out;
  if (!check(d.pool.Allocate(std::max<std::size_t>(1, results * 8), d.stream, &out_positions))) return out;
  args.keys = input.data();
  args.out_keys = out_keys.data();
  args.out_positions = out_positions.as<std::int64_t>();
  const std::vector<Key> poison_keys(results, static_cast<Key>(0x5A5A5A5A5A5A5A5Aull));
  const std::vector<std::int64_t> poison_positions(results, -7);
  if (!check(kernels::CopyToDeviceAsync(input.data(), keys.data(), n * sizeof(Key), d.stream))) return out;
  if (!check(kernels::CopyToDeviceAsync(out_keys.data(), poison_keys.data(), results * sizeof(Key), d.stream))) return out;
  if (!check(kernels::CopyToDeviceAsync(out_positions.data(), poison_positions.data(), results * 8, d.stream))) return out;
  std::size_t temp_bytes = 0;
  if (!check(temp_bytes_of(args, &temp_bytes))) return out;
  if (!check(d.pool.Allocate(std::max<std::size_t>(1, temp_bytes), d.stream, &temp))) return out;
  if (!check(select(args, temp.data(), temp_bytes, d.stream))) return out;
  out.keys.resize(results);
  out.positions.resize(results);
  std::vector<Key> input_after(n);
  if (!check(kernels::CopyToHostAsync(out.keys.data(), out_keys.data(), results * sizeof(Key), d.stream))) return out;
  if (!check(kernels::CopyToHostAsync(out.positions.data(), out_positions.data(), results * 8, d.stream))) return out;
  if (!check(kernels::CopyToHostAsync(input_after.data(), input.data(), n * sizeof(Key), d.stream))) return out;
  if (!check(d.stream.Synchronize())) return out;
  if (input_after != keys) out.status = kernels::Status(kernels::StatusCode::kInternal, "the input keys changed");
  return out;
}

// Per row, the first k of a stable sort: the answer with `sorted`.
template <typename Key>
TopKResult<Key> ReferenceTopK(const std::vector<Key>& keys, std::size_t rows, std::size_t k) {
  TopKResult<Key> out;
  const std::size_t m = rows == 0 ? 0 : keys.size() / rows;
  std::vector<std::int64_t> order(m);
  for (std::size_t r = 0; r < rows; ++r) {
    const Key* row = keys.data() + r * m;
    std::iota(order.begin(), order.end(), std::int64_t{0});
    // partial_sort with the position as second key is the stable answer, and cheap for small k.
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](std::int64_t a, std::int64_t b) { return row[a] != row[b] ? row[a] < row[b] : a < b; });
    for (std::size_t i = 0; i < k; ++i) {
      out.keys.push_back(row[order[i]]);
      out.positions.push_back(order[i]);
    }
  }
  return out;
}

// Row by row, sorts a result's (key, position) pairs, so that unsorted answers compare as sets.
template <typename Key>
void SortEachRowsResults(TopKResult<Key>& r, std::size_t rows, std::size_t k) {
  std::vector<std::pair<Key, std::int64_t>> pairs(k);
  for (std::size_t row = 0; row < rows; ++row) {
    for (std::size_t i = 0; i < k; ++i) pairs[i] = {r.keys[row * k + i], r.positions[row * k + i]};
    std::sort(pairs.begin(), pairs.end());
    for (std::size_t i = 0; i < k; ++i) std::tie(r.keys[row * k + i], r.positions[row * k + i]) = pairs[i];
  }
}

// Selects with one kernel and expects the reference answer (exactly with `sorted`, as a set without).
template <typename Key>
void ExpectTopKMatchesReference(const TopKTempFn& temp_bytes_of, const TopKFn& select, const std::vector<Key>& keys,
                                std::size_t rows, std::size_t k, bool sorted) {
  if (OverTestMaxKeys(keys.size())) return;
  TopKResult<Key> got = RunTopK(temp_bytes_of, select, keys, rows, k, sorted);
  ASSERT_TRUE(got.status.ok()) << got.status.message();
  TopKResult<Key> want = ReferenceTopK(keys, rows, k);
  if (!sorted) {
    SortEachRowsResults(got, rows, k);
    SortEachRowsResults(want, rows, k);
  }
  ASSERT_EQ(got.positions, want.positions) << "rows " << rows << " k " << k << " sorted " << sorted;
  ASSERT_EQ(got.keys, want.keys) << "rows " << rows << " k " << k << " sorted " << sorted;
}

}  // namespace gpusort::testing
