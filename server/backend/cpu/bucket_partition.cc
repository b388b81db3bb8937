#include "server/backend/cpu/bucket_partition.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "server/backend/cpu/parallel.h"
#include "server/core/key_order.h"

namespace gpusort::cpu {
namespace {

std::uint64_t Mix(std::uint64_t x) {  // splitmix64: positions spread over the array, the same each time
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <typename T>
OrderedBitsType<T> SortBitsAt(const std::byte* keys, std::size_t i, bool descending) {
  T key;
  std::memcpy(&key, keys + i * sizeof(T), sizeof(T));
  return ToSortBits(key, descending);
}

// The buckets of kBatch sort bits `x` among `s` (unique, ascending; m of them): for each, the count of
// splitters below it, doubled, plus one when it equals the next splitter. A lower bound without
// branches on the keys (Khuong and Morin's): the steps depend on m alone and each picks its half by a
// mask, because on random keys a branch is a coin toss; and kBatch keys go down together, so that their
// chains of dependent loads overlap. On the dev VM a branching search one key at a time took 26 ns a
// key (perf: 77% of the partition in it), a branch-free one 13 ns.
constexpr int kBatch = 8;

template <typename U>
[[gnu::always_inline]] inline void BucketsOf(const U* s, std::size_t m, const U (&x)[kBatch],
                                             std::size_t (&bucket)[kBatch]) {
  const U* base[kBatch];
#pragma GCC unroll 8
  for (int k = 0; k < kBatch; ++k) base[k] = s;
  for (std::size_t n = m; n > 1;) {
    const std::size_t half = n / 2;
#pragma GCC unroll 8
    for (int k = 0; k < kBatch; ++k) {
      base[k] += half & (std::size_t{0} - static_cast<std::size_t>(base[k][half] < x[k]));
    }
    n -= half;
  }
#pragma GCC unroll 8
  for (int k = 0; k < kBatch; ++k) {
    const std::size_t lo = static_cast<std::size_t>(base[k] - s) + static_cast<std::size_t>(*base[k] < x[k]);
    const bool equal = lo < m && s[lo < m ? lo : 0] == x[k];
    bucket[k] = 2 * lo + static_cast<std::size_t>(equal);
  }
}

// Calls f(i, bucket) for each key i of [begin, end) of `in`, batch by batch.
template <typename T, typename F>
void ForEachBucketOf(const BucketPlan& plan, const OrderedBitsType<T>* s, std::size_t m, const std::byte* in,
                     std::size_t begin, std::size_t end, F&& f) {
  using U = OrderedBitsType<T>;
  if (m == 0) {
    for (std::size_t i = begin; i < end; ++i) f(i, std::size_t{0});
    return;
  }
  U x[kBatch];
  std::size_t bucket[kBatch];
  std::size_t i = begin;
  for (; i + kBatch <= end; i += kBatch) {
#pragma GCC unroll 8
    for (int k = 0; k < kBatch; ++k) x[k] = SortBitsAt<T>(in, i + k, plan.descending);
    BucketsOf<U>(s, m, x, bucket);
#pragma GCC unroll 8
    for (int k = 0; k < kBatch; ++k) f(i + k, bucket[k]);
  }
  for (; i < end; ++i) {  // the tail, padded with copies of its first key
    for (int k = 0; k < kBatch; ++k) x[k] = SortBitsAt<T>(in, i, plan.descending);
    BucketsOf<U>(s, m, x, bucket);
    f(i, bucket[0]);
  }
}

template <typename T>
std::vector<std::size_t> Partition(const BucketPlan& plan, const std::byte* in, std::byte* out, std::size_t count,
                                   int threads) {
  using U = OrderedBitsType<T>;
  const std::vector<U> splitters(plan.splitters.begin(), plan.splitters.end());
  const U* s = splitters.data();
  const std::size_t m = splitters.size(), buckets = plan.bucket_count();
  const std::size_t chunks = std::max<std::size_t>(ChunkCount(count, threads), 1);
  // Pass 1: each chunk's count of each bucket. Pass 2: each chunk writes its keys at its own offset
  // within each bucket (bucket-major, chunk-minor: the input order within a bucket).
  std::vector<std::size_t> at(chunks * buckets, 0);
  ForEachChunk(chunks, [&](std::size_t c) {
    std::vector<std::size_t> counts(buckets, 0);  // the chunk's own: no line shared with another's
    ForEachBucketOf<T>(plan, s, m, in, ChunkBegin(count, chunks, c), ChunkBegin(count, chunks, c + 1),
                       [&](std::size_t, std::size_t b) { ++counts[b]; });
    std::copy(counts.begin(), counts.end(), at.begin() + static_cast<std::ptrdiff_t>(c * buckets));
  });
  std::vector<std::size_t> bounds(buckets + 1, 0);
  std::size_t running = 0;
  for (std::size_t b = 0; b < buckets; ++b) {
    bounds[b] = running;
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t n = at[c * buckets + b];
      at[c * buckets + b] = running;
      running += n;
    }
  }
  bounds[buckets] = running;
  ForEachChunk(chunks, [&](std::size_t c) {
    std::vector<std::size_t> next(at.begin() + static_cast<std::ptrdiff_t>(c * buckets),
                                  at.begin() + static_cast<std::ptrdiff_t>((c + 1) * buckets));
    ForEachBucketOf<T>(plan, s, m, in, ChunkBegin(count, chunks, c), ChunkBegin(count, chunks, c + 1),
                       [&](std::size_t i, std::size_t b) {
                         std::memcpy(out + next[b]++ * sizeof(T), in + i * sizeof(T), sizeof(T));
                       });
  });
  return bounds;
}

}  // namespace

std::size_t SamplePosition(std::size_t j, std::size_t count) { return count == 0 ? 0 : Mix(j) % count; }

BucketPlan SampleSplitters(DType dtype, bool descending, std::span<const std::byte> keys, std::size_t count,
                           std::size_t buckets, std::size_t samples_per_bucket) {
  BucketPlan plan{.dtype = dtype, .descending = descending, .splitters = {}};
  if (count == 0 || buckets <= 1) return plan;
  const std::size_t samples = std::min(count, buckets * std::max<std::size_t>(samples_per_bucket, 1));
  std::vector<std::uint64_t> sampled(samples);
  VisitDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t j = 0; j < samples; ++j) sampled[j] = SortBitsAt<T>(keys.data(), SamplePosition(j, count), descending);
  });
  std::sort(sampled.begin(), sampled.end());
  for (std::size_t b = 1; b < buckets; ++b) plan.splitters.push_back(sampled[b * samples / buckets]);
  plan.splitters.erase(std::unique(plan.splitters.begin(), plan.splitters.end()), plan.splitters.end());
  return plan;
}

std::vector<std::size_t> PartitionByBuckets(const BucketPlan& plan, std::span<const std::byte> in,
                                            std::span<std::byte> out, std::size_t count, int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return VisitDType(plan.dtype, [&](auto tag) {
    using T = decltype(tag);
    return Partition<T>(plan, in.data(), out.data(), count, threads);
  });
}

}  // namespace gpusort::cpu
