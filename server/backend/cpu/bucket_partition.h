// Cutting an array into buckets of keys by sampled splitters, on the host (issue 44: a Sort larger than
// the GPUs' memory as a sample sort, so that each bucket crosses PCIe once each way and comes back
// sorted, and no merge is left for the host). Buckets are in the sort's order: every key of bucket b
// comes before every key of bucket b + 1 in the order asked (server/core/key_order.h, descending
// included). Each splitter also has a bucket of its own for the keys equal to it, so that a key with
// millions of equals (few distinct values, all equal) never makes a bucket too large to sort: a bucket
// of equal keys is sorted already (two keys are equal exactly when their bits are). The partition is
// stable: a bucket holds its keys in their input order, so that a stable sort of each bucket is a
// stable sort of the whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "server/core/dtype.h"

namespace gpusort::cpu {

struct BucketPlan {
  DType dtype = DType::kUInt32;
  bool descending = false;
  // Unique sort bits of the splitters, ascending (ToSortBits, widened to 64 bits). Bucket 2i holds the
  // keys between splitter i - 1 and splitter i (exclusive), bucket 2i + 1 the keys equal to splitter i;
  // 2 * splitters.size() + 1 buckets in all.
  std::vector<std::uint64_t> splitters;

  std::size_t bucket_count() const { return 2 * splitters.size() + 1; }
  static bool HoldsEqualKeys(std::size_t bucket) { return bucket % 2 == 1; }
};

// Splitters for about `buckets` range buckets of `keys` (count * ElementSize(dtype) bytes), from
// samples_per_bucket keys a bucket read at pseudo-random positions (the same for the same count).
BucketPlan SampleSplitters(DType dtype, bool descending, std::span<const std::byte> keys, std::size_t count,
                           std::size_t buckets, std::size_t samples_per_bucket = 256);

// The position sample j of `count` keys is read from (pseudo-random, the same for the same j and count);
// SampleSplitters reads samples 0 .. min(count, buckets * samples_per_bucket) - 1. Tests build arrays
// that fool the sample with it.
std::size_t SamplePosition(std::size_t j, std::size_t count);

// Writes `in`'s keys into `out` (as many bytes) grouped by bucket, in bucket order, each bucket's keys in
// their input order, on up to `threads` threads (0: every core). Returns the buckets' bounds: b + 1
// element offsets per bucket, 0 first and count last. `in` may be shared memory another process
// rewrites meanwhile: the answer is then some keys, never a write outside `out`, and every byte of
// `out` is written (no earlier contents of it show through).
std::vector<std::size_t> PartitionByBuckets(const BucketPlan& plan, std::span<const std::byte> in,
                                            std::span<std::byte> out, std::size_t count, int threads);

}  // namespace gpusort::cpu
