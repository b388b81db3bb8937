// What a Sort or TopK request asks for, decoded from the wire and checked, plus the buffers it works
// on. Backends see only these types: no protobuf, no gRPC, no CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "server/core/dtype.h"

namespace gpusort {

enum class SortOrder { kAscending, kDescending };

// Which kind of engine served a request.
enum class BackendKind { kCpu, kCuda };

// Mirrors gpusort.v1.Algorithm.
enum class Algorithm { kAuto, kRadix, kMerge, kBitonic, kOddEven, kQuicksort, kCpu, kRadixSelect, kSmallK, kThreadLists };
std::string_view AlgorithmName(Algorithm a);  // "auto", "radix", ... (metrics labels, logs, CLI)
bool ParseAlgorithm(std::string_view name, Algorithm* out);

enum class SortPayload { kNone, kValues, kIndices };

struct SortSpec {
  DType dtype = DType::kUInt32;
  SortOrder order = SortOrder::kAscending;
  bool stable = false;
  SortPayload payload = SortPayload::kNone;
  std::size_t value_width = 0;  // bytes per value when payload == kValues
  Algorithm algorithm = Algorithm::kAuto;
  // The keys form `rows` rows of equal length, each sorted on its own (values and indices per row;
  // indices count from the row's start). 1: one array.
  std::size_t rows = 1;
  // Or segments of any lengths: S + 1 offsets, segment s being keys [offsets[s], offsets[s+1]) (0 first,
  // non-decreasing, n last), each sorted on its own like a row. Null: none. Shared, as the spec is
  // copied along a request's path and the offsets can be many.
  std::shared_ptr<const std::vector<std::uint64_t>> segment_offsets;

  bool segmented() const { return rows > 1 || segment_offsets != nullptr; }
  std::size_t segment_count() const { return segment_offsets ? segment_offsets->size() - 1 : rows; }
  // Segment s of a sort of n keys: [SegmentBegin(s, n), SegmentBegin(s + 1, n)).
  std::size_t SegmentBegin(std::size_t s, std::size_t n) const {
    return segment_offsets ? static_cast<std::size_t>((*segment_offsets)[s]) : s * (n / rows);
  }
  // The longest segment (or row) of a sort of n keys.
  std::size_t LongestSegment(std::size_t n) const {
    if (segment_offsets == nullptr) return rows == 0 ? n : n / rows;
    std::uint64_t longest = 0;
    for (std::size_t s = 0; s + 1 < segment_offsets->size(); ++s) {
      const std::uint64_t length = (*segment_offsets)[s + 1] - (*segment_offsets)[s];
      longest = length > longest ? length : longest;
    }
    return static_cast<std::size_t>(longest);
  }
};

// Buffers of one sort, owned by the caller. Sizes are consistent with the spec (the service checks).
struct SortBuffers {
  std::size_t count = 0;               // n keys
  std::span<std::byte> keys;           // n * ElementSize(dtype) bytes, sorted in place
  std::span<const std::byte> values;   // kValues: n * value_width input bytes
  std::span<std::byte> values_out;     // kValues: n * value_width output bytes (not aliasing values)
  std::span<int64_t> indices_out;      // kIndices: n input positions
};

enum class TopKOutput { kValuesAndIndices, kValues, kIndices };

struct TopKSpec {
  DType dtype = DType::kUInt32;
  std::size_t k = 1;
  bool largest = true;
  bool sorted = true;
  TopKOutput output = TopKOutput::kValuesAndIndices;
  std::size_t rows = 1;  // n / rows keys per row; never 0 here (the service maps 0 to 1)
  Algorithm algorithm = Algorithm::kAuto;
  // Or segments of any lengths, as SortSpec's (null: rows). Segment s yields min(k, its length)
  // results, which begin at result_offsets[s] (S + 1 entries, the total last): both are set together,
  // by SetSegments.
  std::shared_ptr<const std::vector<std::uint64_t>> segment_offsets;
  std::shared_ptr<const std::vector<std::uint64_t>> result_offsets;

  bool wants_values() const { return output != TopKOutput::kIndices; }
  bool wants_indices() const { return output != TopKOutput::kValues; }
  bool by_segments() const { return segment_offsets != nullptr; }
  std::size_t segment_count() const { return segment_offsets ? segment_offsets->size() - 1 : rows; }
  // Segment (or row) s of n keys: [SegmentBegin(s, n), SegmentBegin(s + 1, n)).
  std::size_t SegmentBegin(std::size_t s, std::size_t n) const {
    return segment_offsets ? static_cast<std::size_t>((*segment_offsets)[s]) : s * (n / rows);
  }
  // Where segment (or row) s's results begin; ResultBegin(segment_count()) is results().
  std::size_t ResultBegin(std::size_t s) const {
    return result_offsets ? static_cast<std::size_t>((*result_offsets)[s]) : s * k;
  }
  std::size_t results() const { return ResultBegin(segment_count()); }
  // Sets segment_offsets and the result_offsets that follow from them and k.
  void SetSegments(std::shared_ptr<const std::vector<std::uint64_t>> offsets) {
    auto results = std::make_shared<std::vector<std::uint64_t>>(offsets->size(), 0);
    for (std::size_t s = 0; s + 1 < offsets->size(); ++s) {
      const std::uint64_t length = (*offsets)[s + 1] - (*offsets)[s];
      (*results)[s + 1] = (*results)[s] + (length < k ? length : k);
    }
    segment_offsets = std::move(offsets);
    result_offsets = std::move(results);
  }
};

// Buffers of one top-k: results() entries, row (or segment) after row; indices count from its start.
struct TopKBuffers {
  std::size_t count = 0;              // n keys in all rows together
  std::span<const std::byte> keys;    // n * ElementSize(dtype) bytes
  std::span<std::byte> values_out;    // results() keys, when wanted (else empty)
  std::span<int64_t> indices_out;     // results() positions, when wanted (else empty)
};

}  // namespace gpusort
