// GPUSORT_TEST_MAX_KEYS: the most keys one input of the GPU tests may hold; larger inputs are left out
// (unset: none is). scripts/gpu-loop.sh device --sanitize sets it, because compute-sanitizer runs kernels
// 10-100 times slower (racecheck slower still), and what the sanitizers look for (an access out of
// bounds, a shared-memory race, a barrier not every thread reaches) shows at every size a kernel's code
// paths take, not only at 64M or 256M keys.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace gpusort::testing {

inline std::size_t TestMaxKeys() {
  static const std::size_t max = [] {
    const char* text = std::getenv("GPUSORT_TEST_MAX_KEYS");
    if (text == nullptr || *text == '\0') return std::numeric_limits<std::size_t>::max();
    return static_cast<std::size_t>(std::strtoull(text, nullptr, 10));
  }();
  return max;
}

// Whether an input of `keys` is over the limit; the caller leaves it out. The test records each one it
// leaves out (a property in the XML report, a line in its output), so that a pass says what it covered.
inline bool OverTestMaxKeys(std::size_t keys) {
  if (keys <= TestMaxKeys()) return false;
  ::testing::Test::RecordProperty("left_out_over_GPUSORT_TEST_MAX_KEYS", std::to_string(keys));
  std::printf("[ left out ] an input of %zu keys (GPUSORT_TEST_MAX_KEYS=%zu)\n", keys, TestMaxKeys());
  return true;
}

// For a test made of one input over the limit.
#define SKIP_OVER_TEST_MAX_KEYS(keys)                                                               \
  do {                                                                                              \
    if ((keys) > ::gpusort::testing::TestMaxKeys())                                                 \
      GTEST_SKIP() << (keys) << " keys, over GPUSORT_TEST_MAX_KEYS=" << ::gpusort::testing::TestMaxKeys(); \
  } while (0)

}  // namespace gpusort::testing
