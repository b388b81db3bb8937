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

// The bucket of sort bits x among splitters s (unique, ascending): the count of splitters below x,
// doubled, plus one when x equals the next one. Mostly one load from a table: [s.front(), s.back()] is
// cut into at most kSlices slices of 2^shift values each, and a slice with no splitter inside holds its
// one range bucket; only keys in the few slices that hold a splitter search the splitters (a lower
// bound without branches on x, Khuong and Morin's). Below the first splitter and above the last are the
// table's first and last entries. On the dev VM a branching search one key at a time took 26 ns a key
// (perf: 77% of the partition in it), the branch-free search 13 ns, eight keys at a time 5 ns.
template <typename U>
class Classifier {
 public:
  static constexpr std::size_t kSlices = std::size_t{1} << 16;
  static constexpr std::uint16_t kSearch = 0xFFFF;

  explicit Classifier(const std::vector<U>& splitters) : s_(splitters), m_(splitters.size()) {
    if (m_ == 0) return;
    if (2 * m_ >= kSearch) {  // more buckets than the table's entries can name: every key searches
      table_.assign(2, kSearch);
      return;
    }
    first_ = s_.front();
    const std::uint64_t span = static_cast<std::uint64_t>(s_.back()) - first_;
    while ((span >> shift_) >= kSlices) ++shift_;
    slices_ = static_cast<std::size_t>(span >> shift_) + 1;
    table_.assign(slices_ + 2, 0);
    table_[0] = 0;                                        // below every splitter
    table_[slices_ + 1] = static_cast<std::uint16_t>(2 * m_);  // above every splitter
    const std::uint64_t step_less_one = shift_ == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << shift_) - 1;
    for (std::size_t t = 0; t < slices_; ++t) {
      const std::uint64_t low = first_ + (static_cast<std::uint64_t>(t) << shift_);
      const std::uint64_t high = low + std::min(step_less_one, ~std::uint64_t{0} - low);
      const auto below = std::lower_bound(s_.begin(), s_.end(), low, [](U a, std::uint64_t b) { return a < b; });
      const auto through = std::upper_bound(s_.begin(), s_.end(), high, [](std::uint64_t a, U b) { return a < b; });
      table_[t + 1] = below == through ? static_cast<std::uint16_t>(2 * (below - s_.begin())) : kSearch;
    }
  }

  // What Of needs, by value: held in registers through a loop whose stores (through std::byte
  // pointers, which may alias anything) would otherwise make it reload the classifier's fields for
  // every key.
  struct View {
    const std::uint16_t* table;
    const U* s;
    std::size_t m;
    std::uint64_t first;
    int shift;
    std::size_t slices;

    [[gnu::always_inline]] std::size_t Of(U x) const {
      if (m == 0) return 0;
      const std::uint64_t d = static_cast<std::uint64_t>(x) - first;  // wraps below the first splitter
      std::uint64_t t = (d >> shift) + 1;
      t = x < first ? 0 : t;
      t = t > slices ? slices + 1 : t;
      const std::uint16_t e = table[t];
      return e != kSearch ? e : Search(x);
    }
    std::size_t Search(U x) const {
      const U* base = s;
      for (std::size_t n = m; n > 1;) {
        const std::size_t half = n / 2;
        base += half & (std::size_t{0} - static_cast<std::size_t>(base[half] < x));
        n -= half;
      }
      const std::size_t lo = static_cast<std::size_t>(base - s) + static_cast<std::size_t>(*base < x);
      return 2 * lo + static_cast<std::size_t>(lo < m && s[lo < m ? lo : 0] == x);
    }
  };
  View view() const { return {table_.data(), s_.data(), m_, first_, shift_, slices_}; }

 private:
  const std::vector<U>& s_;
  const std::size_t m_;
  std::uint64_t first_ = 0;
  int shift_ = 0;
  std::size_t slices_ = 0;
  std::vector<std::uint16_t> table_;
};

// Calls f(i, bucket) for each key i of [begin, end) of `in`.
template <typename T, typename F>
void ForEachBucketOf(const BucketPlan& plan, const Classifier<OrderedBitsType<T>>& classify, const std::byte* in,
                     std::size_t begin, std::size_t end, F&& f) {
  const auto view = classify.view();
  const bool descending = plan.descending;
  for (std::size_t i = begin; i < end; ++i) f(i, view.Of(SortBitsAt<T>(in, i, descending)));
}

template <typename T>
std::vector<std::size_t> Partition(const BucketPlan& plan, const std::byte* in, std::byte* out, std::size_t count,
                                   int threads) {
  using U = OrderedBitsType<T>;
  const std::vector<U> splitters(plan.splitters.begin(), plan.splitters.end());
  const Classifier<U> classify(splitters);
  const std::size_t buckets = plan.bucket_count();
  const std::size_t chunks = std::max<std::size_t>(ChunkCount(count, threads), 1);
  // Pass 1: each chunk's count of each bucket. Pass 2: each chunk writes its keys at its own offset
  // within each bucket (bucket-major, chunk-minor: the input order within a bucket).
  std::vector<std::size_t> at(chunks * buckets, 0);
  ForEachChunk(chunks, [&](std::size_t c) {
    std::vector<std::size_t> counts(buckets, 0);  // the chunk's own: no line shared with another's
    ForEachBucketOf<T>(plan, classify, in, ChunkBegin(count, chunks, c), ChunkBegin(count, chunks, c + 1),
                       [n = counts.data()](std::size_t, std::size_t b) { ++n[b]; });
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
  // The input may be shared memory its owner rewrites meanwhile: a key read again in pass 2 may fall in
  // another bucket than pass 1 counted. Each chunk therefore writes only inside the slots pass 1 gave it
  // (a key past its bucket's share is dropped), and fills the slots left over with zero bytes: such
  // writes can spoil the answer, never reach outside `out` nor leave what the scratch held before in it.
  ForEachChunk(chunks, [&](std::size_t c) {
    std::vector<std::size_t> next(at.begin() + static_cast<std::ptrdiff_t>(c * buckets),
                                  at.begin() + static_cast<std::ptrdiff_t>((c + 1) * buckets));
    std::vector<std::size_t> end(buckets);
    for (std::size_t b = 0; b < buckets; ++b) {
      end[b] = c + 1 < chunks ? at[(c + 1) * buckets + b] : (b + 1 < buckets ? at[b + 1] : count);
    }
    ForEachBucketOf<T>(plan, classify, in, ChunkBegin(count, chunks, c), ChunkBegin(count, chunks, c + 1),
                       // (pointers by value: the stores through `out` may alias anything the closure
                       // would otherwise read again for every key)
                       [nx = next.data(), ends = end.data(), out, in](std::size_t i, std::size_t b) {
                         if (nx[b] < ends[b]) std::memcpy(out + nx[b]++ * sizeof(T), in + i * sizeof(T), sizeof(T));
                       });
    for (std::size_t b = 0; b < buckets; ++b) {
      if (next[b] < end[b]) std::memset(out + next[b] * sizeof(T), 0, (end[b] - next[b]) * sizeof(T));
    }
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
