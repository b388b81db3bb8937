// LSD radix sort over ToOrderedBits keys: the CPU backend's one sort engine.
//
// CHOICE (measured 2026-11-22 with `build/bin/cpu_sort_bench --benchmark_filter='u32/16777216/'
// --benchmark_repetitions=5`, Release, on the 2-core AMD EPYC dev VM; 16M random uint32, the same input
// for every candidate; median wall time per sort; BENCHMARKS.md has the table):
//   std::sort                                  1328 ms   1.0x
//   std::stable_sort                           1710 ms   0.78x
//   std::sort(std::execution::par) (TBB pstl)  1084 ms   1.2x
//   tbb::parallel_sort                          765 ms   1.7x
//   boost::sort::block_indirect_sort            439 ms   3.0x
//   boost::sort::sample_sort                    921 ms   1.4x
//   boost::sort::parallel_stable_sort          1022 ms   1.3x
//   boost::sort::spreadsort (1 thread)          521 ms   2.5x
//   this LSD radix, 11-bit digits, 2 threads   88.9 ms   15x
//   this LSD radix, 8-bit digits, 2 threads    78.5 ms   17x   <- chosen
// The brief prefers a well-kept library over a hand-written sort unless a measurement says otherwise;
// this one does: the best library sort (block_indirect_sort) is 5.6x slower than the radix sort on the
// keys we serve, and none of them carries a payload or sorts by an arbitrary key transform without an
// extra pass. The radix sort is also stable for free, which Sort's `stable` option needs.
//
// How it works. Keys are mapped to U = ToOrderedBits(key), XOR-ed with a mask (all ones for a
// descending sort; engine_key.h folds a key type's bias into it),
// and sorted ascending by U one 8-bit digit at a time, least significant first. Every pass is a
// stable counting sort, so equal keys (identical bits) keep their input order in either direction,
// and the payload (indices or values) moves with its key. The input is read once up front to
// histogram every digit of every chunk; digits that are the same in all keys are skipped (the common
// case for small integers), and the first pass (every pass when there is one chunk) is laid out from
// those same histograms. Each later pass: per-chunk histogram, exclusive prefix over (bucket, chunk),
// then every chunk scatters its elements to their place; chunks run in parallel on TBB. The key transform is fused
// into the first pass and its inverse into the last one, so output keys are the input bit patterns.
// Memory: one scratch array of n keys when sorting in place into an aligned buffer (two otherwise),
// plus two arrays of n payload elements when a payload moves.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "server/backend/cpu/parallel.h"
#include "server/core/scratch.h"
#include "server/backend/cpu/unaligned.h"
#include "server/core/cancellation.h"
#include "server/core/key_order.h"

namespace gpusort::cpu::radix {

// ---- Where keys come from and go. The engine works on U = ToOrderedBits(key) ^ mask.
template <typename T>
struct RawKeysIn {
  using U = OrderedBitsType<T>;
  const std::byte* p;
  U mask;
  U operator()(std::size_t i) const { return ToOrderedBits(LoadAt<T>(p, i)) ^ mask; }
};
template <typename T>
struct RawKeysOut {
  using U = OrderedBitsType<T>;
  std::byte* p;
  U mask;
  void operator()(std::size_t pos, U u) const { StoreAt<T>(p, pos, FromOrderedBits<T>(u ^ mask)); }
};
template <typename U>
struct BitsIn {
  const U* p;
  U operator()(std::size_t i) const { return p[i]; }
};
template <typename U>
struct BitsOut {
  U* p;
  void operator()(std::size_t pos, U u) const { p[pos] = u; }
};
struct DiscardKeys {
  template <typename U>
  void operator()(std::size_t, U) const {}
};

// ---- What moves with each key: a Payload names the element type P that travels through the passes,
// where the first pass reads it (`in`, by input position) and where the last pass writes it (`out`).
struct Nothing {};
struct NothingIn {
  Nothing operator()(std::size_t) const { return {}; }
};
struct NothingOut {
  void operator()(std::size_t, Nothing) const {}
};
template <typename P>
struct IotaIn {
  P operator()(std::size_t i) const { return static_cast<P>(i); }
};
template <typename P>
struct ArrayIn {
  const P* p;
  P operator()(std::size_t i) const { return p[i]; }
};
template <typename P>
struct ArrayOut {
  P* p;
  void operator()(std::size_t pos, P v) const { p[pos] = v; }
};
template <typename P>
struct RawIn {
  const std::byte* p;
  P operator()(std::size_t i) const { return LoadAt<P>(p, i); }
};
template <typename P>
struct RawOut {
  std::byte* p;
  void operator()(std::size_t pos, P v) const { StoreAt<P>(p, pos, v); }
};
template <typename P>
struct Int64Out {
  int64_t* p;
  void operator()(std::size_t pos, P v) const { p[pos] = static_cast<int64_t>(v); }
};

template <typename P, typename In, typename Out>
struct Payload {
  using Type = P;
  In in;
  Out out;
};
using NoPayload = Payload<Nothing, NothingIn, NothingOut>;

// out[i] = input position of output key i (P: uint32_t when n <= 2^32, else uint64_t).
template <typename P>
Payload<P, IotaIn<P>, Int64Out<P>> IndicesTo(int64_t* out) {
  return {{}, {out}};
}
template <typename P>
Payload<P, IotaIn<P>, ArrayOut<P>> PermutationTo(P* out) {
  return {{}, {out}};
}
// Values of sizeof(P) bytes each, read from `in` and written permuted to `out` (no alignment needed).
template <typename P>
Payload<P, RawIn<P>, RawOut<P>> ValuesTo(const std::byte* in, std::byte* out) {
  return {{in}, {out}};
}

// out(offset + pos, v): a bucket's results land at the bucket's place in the whole output.
template <typename Out>
struct ShiftedOut {
  Out out;
  std::size_t offset;
  template <typename V>
  void operator()(std::size_t pos, V v) const {
    out(offset + pos, v);
  }
};

// Tunables, measured on the 2-core dev VM (min of 7 sorts of random uint32, ms):
//   n       1 thread LSD   1 thread MSD+LSD   2 threads MSD+LSD
//   64K         0.33            0.83                0.50
//   256K        1.48            2.22                1.31
//   1M          6.30            7.98                5.15
//   4M         27.5            34.2                18.2
//   16M       204             153                  85.2
// Below this size the sort runs on the calling thread only (plain LSD).
inline constexpr std::size_t kParallelSortMinElements = std::size_t{1} << 18;
// On one thread the MSD split pays off only once the array is well beyond the caches.
inline constexpr std::size_t kMsdMinElementsOneThread = std::size_t{1} << 23;
// Buckets up to this size are insertion-sorted (a radix pass costs a few 256-entry tables).
inline constexpr std::size_t kSmallBucket = 48;

namespace internal {

template <typename U, int kBits>
struct Digits {
  static constexpr int kCount = (8 * static_cast<int>(sizeof(U)) + kBits - 1) / kBits;
  static constexpr std::size_t kBuckets = std::size_t{1} << kBits;
  static std::size_t Of(U u, int d) {
    return static_cast<std::size_t>(u >> (d * kBits)) & (kBuckets - 1);
  }
};

// Per-chunk histograms of digits [0, digits) of keys kin(0 .. n-1).
struct Histogram {
  std::vector<std::size_t> counts;  // [(chunk * digits + digit) * buckets + bucket]
  int digits = 0;
  std::size_t chunks = 1;
};

// Counts digits [0, kDigits) of keys kin(begin .. end-1) into counts. kDigits is a constant so that the
// loop over digits unrolls into one shift, one byte extract and one increment each: with the count as a
// variable the loop shifted by %cl, ran twice as long, and its speed moved by about 20% with where the
// linker placed it (the 64K CPU sort, issue 42's before/after: docs/benchmarks-log.md).
template <typename U, int kBits, int kDigits, typename KIn>
void CountChunkDigits(std::size_t begin, std::size_t end, const KIn& kin, std::size_t* counts) {
  using D = Digits<U, kBits>;
  for (std::size_t i = begin; i < end; ++i) {
    const U u = kin(i);
    [&]<int... d>(std::integer_sequence<int, d...>) {
      ((++counts[d * D::kBuckets + D::Of(u, d)]), ...);
    }(std::make_integer_sequence<int, kDigits>{});
  }
}

template <typename U, int kBits, typename KIn>
Histogram CountDigits(std::size_t n, int digits, std::size_t chunks, const KIn& kin) {
  using D = Digits<U, kBits>;
  Histogram h{std::vector<std::size_t>(chunks * digits * D::kBuckets, 0), digits, chunks};
  ForEachChunk(chunks, [&](std::size_t c) {
    std::size_t* counts = h.counts.data() + c * digits * D::kBuckets;
    const std::size_t begin = ChunkBegin(n, chunks, c), end = ChunkBegin(n, chunks, c + 1);
    // Every digit (a whole sort) or all but the top one (the buckets after the MSD split).
    if (digits == D::kCount) return CountChunkDigits<U, kBits, D::kCount>(begin, end, kin, counts);
    if constexpr (D::kCount > 1) {
      if (digits == D::kCount - 1) return CountChunkDigits<U, kBits, D::kCount - 1>(begin, end, kin, counts);
    }
    for (std::size_t i = begin; i < end; ++i) {
      const U u = kin(i);
      for (int d = 0; d < digits; ++d) ++counts[d * D::kBuckets + D::Of(u, d)];
    }
  });
  return h;
}

// Total count of bucket b of digit d over all chunks.
template <std::size_t kBuckets>
std::size_t Total(const Histogram& h, int d, std::size_t b) {
  std::size_t total = 0;
  for (std::size_t c = 0; c < h.chunks; ++c) total += h.counts[(c * h.digits + d) * kBuckets + b];
  return total;
}

// The digits on which n keys differ, lowest first (a digit whose one bucket holds all keys is skipped).
template <std::size_t kBuckets>
std::vector<int> ActiveDigits(const Histogram& h, std::size_t n) {
  std::vector<int> active;
  for (int d = 0; d < h.digits; ++d) {
    bool constant = false;
    for (std::size_t b = 0; b < kBuckets && !constant; ++b) constant = Total<kBuckets>(h, d, b) == n;
    if (!constant) active.push_back(d);
  }
  return active;
}

enum class Buf { kNone, kA, kB };

// Scratch for sorting n elements, and how it overlaps the source and the destination.
template <typename U, typename P>
struct Space {
  U* a = nullptr;   // n keys, always
  U* b = nullptr;   // n keys, needed from 3 passes on (2 when the source is in a)
  P* pa = nullptr;  // n payload elements, needed from 2 passes on
  P* pb = nullptr;  // n payload elements, needed from 3 passes on (2 when the source is in a)
  Buf src_in = Buf::kNone;  // the first pass reads the keys (and payload) from a/pa or b
  bool dst_in_b = false;    // the destination's keys are the memory of b
  bool src_is_dst = false;  // the first pass reads the destination's memory
};

// Stable LSD radix sort of n elements: keys kin(i) (ordered bits ^ mask), payload pin(i). Writes
// the keys as T to dst (null: not at all) and the payload through pout. Sorts on digits
// [0, digits); `given` may hold their histograms for kin with `chunks` chunks.
// kWriteKeys: dst is not null (a template argument, not a test of dst, so that each instantiation
// compiles one last pass rather than both: compile time, see engine_key.h).
// long-function: the pass plan (which buffer each pass reads and writes, where the last one lands) and
// the pass loop share a dozen locals through lambdas that the compiler inlines into the hot loops;
// split, each piece would take them all as arguments. The CPU engine's speed (BENCHMARKS.md) is this.
template <typename T, bool kWriteKeys, int kBits, typename P, typename KIn, typename PIn, typename POut>
absl::Status Lsd(std::size_t n, int digits, const KIn& kin, const PIn& pin, std::byte* dst,
                 OrderedBitsType<T> mask, const POut& pout, const Space<OrderedBitsType<T>, P>& space,
                 std::size_t chunks, const Histogram* given, const Cancellation* cancel) {
  using U = OrderedBitsType<T>;
  using D = Digits<U, kBits>;
  constexpr std::size_t kBuckets = D::kBuckets;
  constexpr bool kHasPayload = !std::is_same_v<P, Nothing>;
  auto chunk_begin = [&](std::size_t c) { return ChunkBegin(n, chunks, c); };

  Histogram computed;
  if (given == nullptr) computed = CountDigits<U, kBits>(n, digits, chunks, kin);
  const Histogram& hist = given != nullptr ? *given : computed;
  const std::vector<int> active = ActiveDigits<kBuckets>(hist, n);
  const std::size_t passes = active.size();

  if (passes == 0) {  // all keys identical: the input order is the sorted order
    ForEachChunk(chunks, [&](std::size_t c) {
      for (std::size_t i = chunk_begin(c), e = chunk_begin(c + 1); i < e; ++i) {
        if (dst != nullptr && !space.src_is_dst) StoreAt<T>(dst, i, FromOrderedBits<T>(kin(i) ^ mask));
        pout(i, pin(i));
      }
    });
    return absl::OkStatus();
  }

  // Pass j < passes-1 writes intermediate j, alternately a and b, starting with the one the source is
  // not in; when the destination is b, preferably so that the last pass does not read b.
  bool first_is_a = true;
  if (space.src_in == Buf::kA) first_is_a = false;
  else if (space.src_in == Buf::kNone && space.dst_in_b && passes >= 2) first_is_a = (passes - 2) % 2 == 0;
  auto in_a = [&](std::size_t j) { return (j % 2 == 0) == first_is_a; };
  auto keys_of = [&](std::size_t j) { return in_a(j) ? space.a : space.b; };
  auto pay_mid_in = [&](std::size_t j) {
    if constexpr (kHasPayload) return ArrayIn<P>{in_a(j) ? space.pa : space.pb};
    else return NothingIn{};
  };
  auto pay_mid_out = [&](std::size_t j) {
    if constexpr (kHasPayload) return ArrayOut<P>{in_a(j) ? space.pa : space.pb};
    else return NothingOut{};
  };
  // The last pass must not write the keys it reads: then it writes them to a, copied to dst after.
  const bool last_reads_dst =
      passes == 1 ? space.src_is_dst || (space.dst_in_b && space.src_in == Buf::kB)
                  : space.dst_in_b && !in_a(passes - 2);
  std::byte* const final_keys =
      dst != nullptr && last_reads_dst ? reinterpret_cast<std::byte*>(space.a) : dst;

  std::vector<std::size_t> counts(chunks * kBuckets), offsets(chunks * kBuckets);
  auto run_pass = [&](std::size_t j, const auto& key_in, const auto& key_out, const auto& pay_in,
                      const auto& pay_out) {
    const int d = active[j];
    const std::size_t* cnt = hist.counts.data() + d * kBuckets;
    std::size_t stride = hist.digits * kBuckets;
    if (j > 0 && chunks > 1) {
      // The elements moved between chunks: count this digit again. (One chunk's histogram does not
      // depend on the order of its elements, so a single chunk reuses the first count.)
      ForEachChunk(chunks, [&](std::size_t c) {
        std::size_t* h = counts.data() + c * kBuckets;
        std::fill(h, h + kBuckets, 0);
        for (std::size_t i = chunk_begin(c), e = chunk_begin(c + 1); i < e; ++i) ++h[D::Of(key_in(i), d)];
      });
      cnt = counts.data();
      stride = kBuckets;
    }
    std::size_t sum = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
      for (std::size_t c = 0; c < chunks; ++c) {
        offsets[c * kBuckets + b] = sum;
        sum += cnt[c * stride + b];
      }
    }
    ForEachChunk(chunks, [&](std::size_t c) {
      std::size_t off[kBuckets];
      std::memcpy(off, offsets.data() + c * kBuckets, sizeof(off));
      for (std::size_t i = chunk_begin(c), e = chunk_begin(c + 1); i < e; ++i) {
        const U u = key_in(i);
        const std::size_t pos = off[D::Of(u, d)]++;
        key_out(pos, u);
        pay_out(pos, pay_in(i));
      }
    });
  };
  auto all_passes = [&](const auto& final_key_out) -> absl::Status {
    for (std::size_t j = 0; j < passes; ++j) {
      const bool first = j == 0, last = j + 1 == passes;
      if (first && last)
        run_pass(j, kin, final_key_out, pin, pout);
      else if (first)
        run_pass(j, kin, BitsOut<U>{keys_of(j)}, pin, pay_mid_out(j));
      else if (last)
        run_pass(j, BitsIn<U>{keys_of(j - 1)}, final_key_out, pay_mid_in(j - 1), pout);
      else
        run_pass(j, BitsIn<U>{keys_of(j - 1)}, BitsOut<U>{keys_of(j)}, pay_mid_in(j - 1),
                 pay_mid_out(j));
      if (cancel != nullptr && !last) {
        absl::Status status = cancel->Check();
        if (!status.ok()) return status;
      }
    }
    return absl::OkStatus();
  };
  absl::Status status;
  if constexpr (kWriteKeys) status = all_passes(RawKeysOut<T>{final_keys, mask});
  else status = all_passes(DiscardKeys{});
  if (!status.ok()) return status;
  if (final_keys != dst) {
    ForEachChunk(chunks, [&](std::size_t c) {
      const std::size_t b = ChunkBegin(n, chunks, c) * sizeof(T), e = ChunkBegin(n, chunks, c + 1) * sizeof(T);
      std::memcpy(dst + b, final_keys + b, e - b);
    });
  }
  return absl::OkStatus();
}

// A few elements: stable insertion sort by key, then written out like the last radix pass.
template <typename T, typename KIn, typename PIn, typename POut>
void SmallRange(std::size_t n, const KIn& kin, const PIn& pin, std::byte* dst,
                OrderedBitsType<T> mask, const POut& pout) {
  using U = OrderedBitsType<T>;
  struct Entry {
    U key;
    uint32_t pos;
  };
  Entry e[kSmallBucket];
  for (std::size_t i = 0; i < n; ++i) {
    const Entry x{kin(i), static_cast<uint32_t>(i)};
    std::size_t j = i;
    for (; j > 0 && e[j - 1].key > x.key; --j) e[j] = e[j - 1];
    e[j] = x;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (dst != nullptr) StoreAt<T>(dst, i, FromOrderedBits<T>(e[i].key ^ mask));
    pout(i, pin(e[i].pos));
  }
}

}  // namespace internal

// Sort and Order below (kWriteKeys: dst is not null).
// long-function: the scratch plan, the first MSD scatter by the top digit and the per-bucket LSD sorts
// share the scratch buffers, offsets and cancellation flag through lambdas inlined into the hot loops;
// apart, each piece would take them all as arguments.
template <typename T, bool kWriteKeys, int kBits, typename Pay>
absl::Status SortImpl(std::size_t n, const std::byte* src, std::byte* dst, OrderedBitsType<T> mask,
                      const Pay& pay, int threads, const Cancellation* cancel) {
  using U = OrderedBitsType<T>;
  using P = typename Pay::Type;
  using D = internal::Digits<U, kBits>;
  constexpr bool kHasPayload = !std::is_same_v<P, Nothing>;
  static_assert(sizeof(T) == sizeof(U));
  if (n == 0) return absl::OkStatus();

  const std::size_t chunks = n < kParallelSortMinElements ? 1 : ChunkCount(n, threads);
  const RawKeysIn<T> kin{src, mask};
  // One read of the input: every chunk's histogram of every digit.
  const internal::Histogram hist = internal::CountDigits<U, kBits>(n, D::kCount, chunks, kin);
  const std::vector<int> active = internal::ActiveDigits<D::kBuckets>(hist, n);
  const std::size_t passes = active.size();

  const bool in_place = dst == src;
  U* const dst_bits = in_place && IsAlignedFor<U>(dst) ? reinterpret_cast<U*>(dst) : nullptr;
  ScratchArray<U> x, y;
  ScratchArray<P> px, py;
  if (passes >= 1) x = MakeScratch<U>(n);
  if (passes >= 3 && dst_bits == nullptr) y = MakeScratch<U>(n);
  if constexpr (kHasPayload) {
    if (passes >= 2) px = MakeScratch<P>(n);
    if (passes >= 3) py = MakeScratch<P>(n);
  }
  U* const b = dst_bits != nullptr ? dst_bits : y.get();

  if (passes < 2 || (chunks == 1 && n < kMsdMinElementsOneThread)) {
    // LSD over the whole array.
    const internal::Space<U, P> space{x.get(), b, px.get(), py.get(),
                                      dst_bits != nullptr ? internal::Buf::kB : internal::Buf::kNone,
                                      dst_bits != nullptr, in_place};
    return internal::Lsd<T, kWriteKeys, kBits, P>(n, D::kCount, kin, pay.in, dst, mask, pay.out, space, chunks,
                                      &hist, cancel);
  }

  // Parallel: one stable pass on the top digit that varies, from the input into x/px (the only pass
  // that moves elements between threads), then each bucket sorted by LSD on its own.
  const int top = active.back();
  std::vector<std::size_t> offsets(chunks * D::kBuckets);
  std::vector<std::size_t> starts(D::kBuckets + 1, 0);
  {
    std::size_t sum = 0;
    for (std::size_t bucket = 0; bucket < D::kBuckets; ++bucket) {
      starts[bucket] = sum;
      for (std::size_t c = 0; c < chunks; ++c) {
        offsets[c * D::kBuckets + bucket] = sum;
        sum += hist.counts[(c * hist.digits + top) * D::kBuckets + bucket];
      }
    }
    starts[D::kBuckets] = sum;
  }
  ForEachChunk(chunks, [&](std::size_t c) {
    std::size_t off[D::kBuckets];
    std::memcpy(off, offsets.data() + c * D::kBuckets, sizeof(off));
    U* const keys_out = x.get();
    for (std::size_t i = ChunkBegin(n, chunks, c), e = ChunkBegin(n, chunks, c + 1); i < e; ++i) {
      const U u = kin(i);
      const std::size_t pos = off[D::Of(u, top)]++;
      keys_out[pos] = u;
      if constexpr (kHasPayload) px[pos] = pay.in(i);
    }
  });
  if (cancel != nullptr) {
    absl::Status status = cancel->Check();
    if (!status.ok()) return status;
  }

  std::atomic<bool> stop{false};
  auto sort_bucket = [&](std::size_t bucket) {
    const std::size_t s = starts[bucket], count = starts[bucket + 1] - s;
    if (count == 0 || stop.load(std::memory_order_relaxed)) return;
    if (cancel != nullptr && !cancel->Check().ok()) {
      stop.store(true, std::memory_order_relaxed);
      return;
    }
    const BitsIn<U> bucket_keys{x.get() + s};
    std::byte* const bucket_dst = dst != nullptr ? dst + s * sizeof(T) : nullptr;
    const ShiftedOut<decltype(pay.out)> bucket_out{pay.out, s};
    auto run = [&](const auto& bucket_pay) {
      if (count <= kSmallBucket) {
        internal::SmallRange<T>(count, bucket_keys, bucket_pay, bucket_dst, mask, bucket_out);
        return;
      }
      const internal::Space<U, P> space{x.get() + s, b != nullptr ? b + s : nullptr,
                                        kHasPayload ? px.get() + s : nullptr,
                                        kHasPayload && py ? py.get() + s : nullptr,
                                        internal::Buf::kA, dst_bits != nullptr, false};
      // A bucket holding a large share of the keys (skewed input) is itself sorted in parallel.
      const std::size_t bucket_chunks =
          count * 2 * static_cast<std::size_t>(threads) > n ? ChunkCount(count, threads) : 1;
      (void)internal::Lsd<T, kWriteKeys, kBits, P>(count, top, bucket_keys, bucket_pay, bucket_dst, mask,
                                       bucket_out, space, bucket_chunks, nullptr, nullptr);
    };
    if constexpr (kHasPayload) run(ArrayIn<P>{px.get() + s});
    else run(NothingIn{});
  };
  if (chunks == 1) {
    for (std::size_t bucket = 0; bucket < D::kBuckets; ++bucket) sort_bucket(bucket);
  } else {
    ParallelFor(tbb::blocked_range<std::size_t>(0, D::kBuckets, 1), [&](const tbb::blocked_range<std::size_t>& r) {
      for (std::size_t bucket = r.begin(); bucket != r.end(); ++bucket) sort_bucket(bucket);
    });
  }
  if (stop.load()) return cancel->Check();
  return absl::OkStatus();
}

// Sorts the n keys of type T at `src` (any alignment) stably by ToOrderedBits(key) ^ mask, ascending
// (mask = OrderMask(descending), with the engine key's bias where T serves another type: engine_key.h),
// writing the sorted keys to `dst` (may be `src`) and the payload through pay.out. Checks `cancel`
// (may be null) between passes and returns its error.
template <typename T, int kBits = 8, typename Pay = NoPayload>
absl::Status Sort(std::size_t n, const std::byte* src, std::byte* dst, OrderedBitsType<T> mask,
                  const Pay& pay, int threads, const Cancellation* cancel) {
  return SortImpl<T, /*kWriteKeys=*/true, kBits>(n, src, dst, mask, pay, threads, cancel);
}

// The same order, with only the payload written (an argsort when it is a permutation); keys stay.
template <typename T, int kBits = 8, typename Pay = NoPayload>
absl::Status Order(std::size_t n, const std::byte* src, OrderedBitsType<T> mask, const Pay& pay,
                   int threads, const Cancellation* cancel) {
  return SortImpl<T, /*kWriteKeys=*/false, kBits>(n, src, nullptr, mask, pay, threads, cancel);
}

}  // namespace gpusort::cpu::radix
