// What the SMALL_K and THREAD_LISTS top-k kernels (kernels/top_k.h) share on the host: the argument
// checks, and the plan of selection levels for rows longer than one block's slice.
//
// Levels: level 0 cuts every row into slices and selects each slice's min(k, slice length) best into
// a candidate list (slice s's candidates at entries [s * k, ...) of the row's list, so the list is
// dense: only the last slice can be short). Each next level does the same to the previous list, until a
// level has one slice per row: that one writes the answer. A slice of T >= 2k entries leaves at most
// k, so every level shrinks the list (T >= 8k on every path here) and a few levels reach one slice.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpusort/kernels/top_k.h"

namespace gpusort::kernels::top_k {

inline constexpr std::uint32_t kNoPosition = 0xFFFFFFFFu;  // padding: after every real position

inline std::size_t KeyBytes(KeyWidth width) {
  return width == KeyWidth::k16 ? 2 : width == KeyWidth::k32 ? 4 : 8;
}

// The checks every selection kernel makes before touching memory; `name` and `max_k` go into messages.
// TempBytes depends on the sizes alone (kernels/top_k.h), so it passes with_pointers = false.
inline Status CheckArgs(const TopKArgs& a, const char* name, const char* max_k_name, std::size_t max_k,
                        bool with_pointers, bool takes_16_bit = false) {
  auto invalid = [&](const std::string& what) {
    return Status(StatusCode::kInvalidArgument, std::string(name) + " top-k: " + what);
  };
  if (a.key_width == KeyWidth::k16 && !takes_16_bit) return invalid("takes 32- or 64-bit keys, not 16-bit");
  if (a.raw_keys) return invalid("takes ordered bits, not raw keys (raw_keys is RADIX_SELECT's)");
  if (a.key_width != KeyWidth::k32 && a.key_width != KeyWidth::k64 && a.key_width != KeyWidth::k16) {
    return invalid("unknown key width");
  }
  if (a.k > max_k) {
    return invalid("k = " + std::to_string(a.k) + " is over its limit " + std::to_string(max_k) + " (" +
                   max_k_name + ")");
  }
  if (a.rows == 0) return Status::Ok();  // nothing to select
  if (a.row_length != 0 && a.rows > static_cast<std::size_t>(INT_MAX) / a.row_length) {
    return invalid("rows * row_length is over 2^31 - 1");
  }
  if (a.k == 0 || a.k > a.row_length) {
    return invalid("k = " + std::to_string(a.k) + " is outside 1..row_length (" + std::to_string(a.row_length) +
                   ")");
  }
  if (with_pointers && a.keys == nullptr) return invalid("keys is null");
  return Status::Ok();
}

struct Level {
  std::size_t length = 0;     // entries per row this level reads
  std::size_t slice = 0;      // entries per slice
  std::size_t slices = 0;     // slices per row: ceil(length / slice)
};

// The levels for rows of `row_length`, with `slice_of(length, first)` the slice length a level that
// reads `length` entries per row uses (first: level 0, which reads the input).
inline std::vector<Level> PlanLevels(std::size_t row_length, std::size_t k,
                                     const std::function<std::size_t(std::size_t, bool)>& slice_of) {
  std::vector<Level> levels;
  std::size_t length = row_length;
  for (bool first = true;; first = false) {
    Level level;
    level.length = length;
    level.slice = slice_of(length, first);
    level.slices = (length + level.slice - 1) / level.slice;
    levels.push_back(level);
    if (level.slices <= 1) return levels;
    const std::size_t last = length - (level.slices - 1) * level.slice;
    length = (level.slices - 1) * k + (last < k ? last : k);
  }
}

// Temp: two candidate buffers (a level reads one and writes the other), each with keys and u32
// positions for rows * (the longest list) entries; none when one level does it all.
struct CandidateBuffers {
  void* keys[2] = {nullptr, nullptr};
  std::uint32_t* positions[2] = {nullptr, nullptr};
};

inline std::size_t AlignUp(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

inline std::size_t CandidateTempBytes(const std::vector<Level>& levels, std::size_t rows, KeyWidth width) {
  if (levels.size() <= 1) return 0;
  const std::size_t entries = rows * levels[1].length;  // lists only shrink from level 1 on
  return 2 * (AlignUp(entries * KeyBytes(width)) + AlignUp(entries * 4));
}

inline CandidateBuffers CarveCandidates(const std::vector<Level>& levels, std::size_t rows, KeyWidth width,
                                        void* temp) {
  CandidateBuffers b;
  if (levels.size() <= 1) return b;
  const std::size_t entries = rows * levels[1].length;
  auto* p = static_cast<unsigned char*>(temp);
  for (int i = 0; i < 2; ++i) {
    b.keys[i] = p;
    p += AlignUp(entries * KeyBytes(width));
    b.positions[i] = reinterpret_cast<std::uint32_t*>(p);
    p += AlignUp(entries * 4);
  }
  return b;
}

inline Status CheckTemp(const char* name, const void* temp, std::size_t temp_bytes, std::size_t needed) {
  if (needed == 0) return Status::Ok();
  if (temp == nullptr || temp_bytes < needed) {
    return Status(StatusCode::kInvalidArgument, std::string(name) + " top-k: temp storage of " +
                                                    std::to_string(temp_bytes) + " bytes, " +
                                                    std::to_string(needed) + " needed (ask TempBytes)");
  }
  return Status::Ok();
}

inline std::size_t NextPow2(std::size_t x) {
  std::size_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

}  // namespace gpusort::kernels::top_k
