// split_upload_probe: where the time of a 16M-key Sort between registered host ranges goes (issue 18's
// shared-memory figure), step by step on the GPU's clock and the host's, for the engine's split-upload job
// (server/backend/cuda/split_upload_sort_job.cc) and the alternatives weighed against it. Each variant is
// the job's sequence of kernels/ calls written out here with an event after every step, so that a trace
// shows what the engine's stages (h2d, kernel, d2h) only sum:
//
//   plain        the whole upload, the host reads the varying bits, one sort, the copy out (sort_job.h)
//   split        the engine's job: parts of 2/3 and 1/3 on a side stream; the host waits for each part to
//                land and for its varying bits before it queues the part's sort (blocking-sync events, as
//                the engine's kernels::Event are)
//   split-spin   the same with events the host spins on
//   split3-spin  the job in three parts (1/2, 1/3, 1/6; from 16M keys), spinning
//   split3-sliced  the same with the last merge in 8 slices, each copied out on the side stream as it is
//                made (the engine's job now)
//   split3-early split3-sliced with each part's ordering and OR/AND on a third stream as soon as it lands,
//                so that the last part's bits do not queue behind the sorts and the merge before it
//   split3-quarters, split3-45-30-25, split3-50-30-20, split4-40-25-20-15, split4-45-25-18-12
//                split3-sliced with other part sizes (and four parts)
//   async2       the same parts with no host wait: the stream waits for each part's copy (an event), each
//                part sorts over all bits, the merge and the copy out queue behind; the host waits once
//   async2-check async2, but the host reads the last part's varying bits before it queues the copy out (what
//                an exact job that sorts the last part over the first part's bits must check)
//   async3-check three parts (1/2, 1/3, 1/6): the first two merge while the third crosses
//
// Keys: uniform random uint32 (all 32 bits vary, so sorting over all bits costs nothing extra here) in a
// registered memfd region, sorted into a second one. Every variant's answer is checked against std::sort
// once. Runs alternate between the variants; each mark prints as the median over the runs, in ms from the
// first copy's start (GPU marks) or from the host's start (host marks).
//
//   split_upload_probe [--count 16M] [--runs 30] [--variants plain,split,...]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/cuda_bench_harness.cuh"
#include "bench/memfd_region.h"
#include "gpusort/kernels/key_transform.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/radix_sort.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/sorted_runs.h"

namespace gpusort::bench {
namespace {

using Clock = std::chrono::steady_clock;
namespace k = gpusort::kernels;

cudaStream_t Native(const k::Stream& s) { return static_cast<cudaStream_t>(s.native()); }

// Named GPU events (relative to the first) and host instants (relative to Start) of one run.
class Timeline {
 public:
  explicit Timeline(bool blocking) {
    for (cudaEvent_t& e : events_) {
      CUDA_CHECK(cudaEventCreateWithFlags(&e, blocking ? cudaEventBlockingSync : cudaEventDefault));
    }
  }
  ~Timeline() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  void Start(cudaStream_t s) {
    used_ = 0;
    names_.clear();
    host_.clear();
    host_start_ = Clock::now();
    Mark("start", s);
  }
  cudaEvent_t Mark(const char* name, cudaStream_t s) {
    if (used_ == kEvents) Die("too many marks");
    CUDA_CHECK(cudaEventRecord(events_[used_], s));
    names_.push_back(name);
    return events_[used_++];
  }
  void Wait(cudaEvent_t e, const char* host_name) {
    CUDA_CHECK(cudaEventSynchronize(e));
    HostMark(host_name);
  }
  void HostMark(const char* name) {
    host_.emplace_back(name, std::chrono::duration<double, std::milli>(Clock::now() - host_start_).count());
  }
  // After the run's last work has finished: every mark, in the order it was made.
  std::vector<std::pair<std::string, double>> Collect() const {
    std::vector<std::pair<std::string, double>> marks;
    for (int i = 1; i < used_; ++i) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, events_[0], events_[i]));
      marks.emplace_back("gpu:  " + names_[i], ms);
    }
    for (const auto& [name, ms] : host_) marks.emplace_back("host: " + name, ms);
    return marks;
  }

 private:
  static constexpr int kEvents = 32;
  cudaEvent_t events_[kEvents];
  int used_ = 0;
  std::vector<std::string> names_;
  std::vector<std::pair<std::string, double>> host_;
  Clock::time_point host_start_;
};

struct Variant {
  std::string name;
  bool blocking = true;          // blocking-sync events (the engine's) or spinning ones
  bool host_waits = true;        // the host reads each part's varying bits before its sort (the engine)
  bool check_last = false;       // async: the host reads the last part's bits before the copy out
  std::vector<double> fractions;  // of the keys, per part, in upload order
  bool sliced = false;            // split: the last merge in slices, each copied out as it is made
  bool early_bits = false;        // split: each part's bits on a third stream as soon as it lands
};

class Probe {
 public:
  Probe(std::size_t count) : n_(count) {
    const std::size_t bytes = n_ * 4;
    if (!in_.Create(bytes) || !out_.Create(bytes)) Die("registered memfd regions");
    std::mt19937_64 rng(1);
    auto* keys = static_cast<std::uint32_t*>(in_.data());
    for (std::size_t i = 0; i < n_; ++i) keys[i] = static_cast<std::uint32_t>(rng());
    expected_.assign(keys, keys + n_);
    std::sort(expected_.begin(), expected_.end());
    KERNELS_CHECK(k::Stream::Create(&stream_));
    KERNELS_CHECK(k::Stream::Create(&side_));
    KERNELS_CHECK(k::Stream::Create(&bits_));
    for (DeviceBuffer* b : {&landing_, &runs_, &spare_}) *b = DeviceBuffer(bytes);
    or_and_ = DeviceBuffer(8 * sizeof(std::uint64_t));
    CUDA_CHECK(cudaMallocHost(&or_and_host_, 8 * sizeof(std::uint64_t)));
    k::RadixSortArgs sizing;
    sizing.count = n_;
    sizing.keep_input = true;
    KERNELS_CHECK(k::RadixSortTempBytes(sizing, &temp_bytes_));
    temp_ = DeviceBuffer(temp_bytes_);
  }
  ~Probe() { cudaFreeHost(or_and_host_); }

  void Run(const Variant& v, Timeline& t) {
    std::memset(out_.data(), 0, n_ * 4);
    if (v.fractions.size() == 1) {
      RunPlain(t);
    } else if (v.host_waits) {
      RunSplit(v, t);
    } else {
      RunAsync(v, t);
    }
  }
  bool AnswerIsRight() const { return std::memcmp(out_.data(), expected_.data(), n_ * 4) == 0; }

 private:
  std::byte* At(const DeviceBuffer& b, std::size_t key) const { return static_cast<std::byte*>(b.get()) + key * 4; }
  const std::byte* HostIn(std::size_t key) const { return static_cast<const std::byte*>(in_.data()) + key * 4; }
  std::uint64_t* OrAnd(int part) const { return static_cast<std::uint64_t*>(or_and_.get()) + 2 * part; }

  void ResetOrAnd() {
    for (int i = 0; i < 8; ++i) or_and_host_[i] = (i % 2 == 0) ? 0 : ~std::uint64_t{0};
    KERNELS_CHECK(k::CopyToDeviceAsync(or_and_.get(), or_and_host_, 8 * sizeof(std::uint64_t), stream_));
  }
  // Part `part`, keys [begin, begin + count) of the landing buffer, to ordered bits; its OR/AND to the host.
  void OrderPart(int part, std::size_t begin, std::size_t count) { OrderPartOn(part, begin, count, stream_); }
  void OrderPartOn(int part, std::size_t begin, std::size_t count, const k::Stream& on) {
    KERNELS_CHECK(k::ToOrderedBitsAsync(k::KeyWidth::k32, k::KeyKind::kUnsigned, false, At(landing_, begin), count,
                                        OrAnd(part), on));
    KERNELS_CHECK(k::CopyToHostAsync(or_and_host_ + 2 * part, OrAnd(part), 16, on));
  }
  // Keys [begin, begin + count) of the landing buffer sorted over [begin_bit, end_bit): into the same
  // place of `into`, keeping their input, or (into null) where they landed with runs_ as CUB's second
  // buffer, copied back when CUB's passes end there.
  void SortPart(std::size_t begin, std::size_t count, const DeviceBuffer* into, int begin_bit, int end_bit) {
    const bool in_place = into == nullptr;
    k::RadixSortArgs args;
    args.count = count;
    args.keys[0] = At(landing_, begin);
    args.keys[1] = At(in_place ? runs_ : *into, begin);
    args.keep_input = !in_place;
    args.begin_bit = begin_bit;
    args.end_bit = end_bit;
    int result = 0;
    KERNELS_CHECK(k::RadixSort(args, temp_.get(), temp_bytes_, stream_, &result));
    if (!in_place && result != 1) Die("the sort kept its answer outside its output buffer");
    if (in_place && result == 1) {
      KERNELS_CHECK(k::CopyOnDeviceAsync(At(landing_, begin), At(runs_, begin), count * 4, stream_));
    }
  }
  // server/core/varying_bits.h's VaryingBitRange, which needs C++20 (<bit>); CUDA sources build as C++17.
  void BitRange(int part, int* begin_bit, int* end_bit) const {
    const std::uint64_t varying = or_and_host_[2 * part] ^ or_and_host_[2 * part + 1];
    *begin_bit = varying == 0 ? 0 : __builtin_ctzll(varying);
    *end_bit = varying == 0 ? 0 : 64 - __builtin_clzll(varying);
  }
  void Egress(const DeviceBuffer& sorted, Timeline& t) {
    KERNELS_CHECK(k::FromOrderedBitsAsync(k::KeyWidth::k32, k::KeyKind::kUnsigned, false, sorted.get(), n_, stream_));
    KERNELS_CHECK(k::CopyAnyAsync(out_.data(), sorted.get(), n_ * 4, stream_));
    t.Mark("answer landed", Native(stream_));
    KERNELS_CHECK(stream_.Synchronize());
    t.HostMark("done");
  }

  void RunPlain(Timeline& t) {
    t.Start(Native(stream_));
    KERNELS_CHECK(k::CopyAnyAsync(landing_.get(), HostIn(0), n_ * 4, stream_));
    t.Mark("keys landed", Native(stream_));
    ResetOrAnd();
    OrderPart(0, 0, n_);
    t.Wait(t.Mark("bits read", Native(stream_)), "bits read");
    int b = 0, e = 0;
    BitRange(0, &b, &e);
    SortPart(0, n_, &runs_, b, e);
    t.Mark("sorted", Native(stream_));
    Egress(runs_, t);
  }

  // Part p is keys [begin[p], begin[p + 1]), sized by the variant's fractions.
  std::vector<std::size_t> PartBegins(const Variant& v) const {
    const int parts = static_cast<int>(v.fractions.size());
    std::vector<std::size_t> begin(parts + 1, 0);
    for (int p = 0; p < parts; ++p) {
      begin[p + 1] = p + 1 == parts ? n_ : begin[p] + static_cast<std::size_t>(n_ * v.fractions[p]);
    }
    return begin;
  }
  // Starts the run: every part's copy on the side stream, one after the other, each followed by a mark
  // (the event of its landing, returned); then the OR/AND accumulators' reset on the stream.
  std::vector<cudaEvent_t> Upload(const std::vector<std::size_t>& begin, const char* const* names, Timeline& t) {
    t.Start(Native(side_));
    std::vector<cudaEvent_t> landed(begin.size() - 1);
    for (std::size_t p = 0; p + 1 < begin.size(); ++p) {
      KERNELS_CHECK(k::CopyAnyAsync(At(landing_, begin[p]), HostIn(begin[p]), (begin[p + 1] - begin[p]) * 4, side_));
      landed[p] = t.Mark(names[p], Native(side_));
    }
    ResetOrAnd();
    return landed;
  }

  // The engine's job, step for step (split_upload_sort_job.cc): each part but the last is ordered, its bits
  // read by the host, sorted next to the sorted prefix and merged into it while the next parts cross; the
  // last part the same once it has landed. The prefix moves between runs_ and landing_ with each merge; a
  // part sorted where it landed (the prefix there) uses runs_ as CUB's second buffer.
  void RunSplit(const Variant& v, Timeline& t) {
    static const char* kLanded[] = {"A landed", "B landed", "C landed", "D landed"};
    static const char* kBits[] = {"A bits read", "B bits read", "C bits read", "D bits read"};
    static const char* kSorted[] = {"A sorted", "B sorted", "C sorted", "D sorted"};
    static const char* kMerged[] = {"", "merged A-B", "merged A-C", "merged A-D"};
    const int parts = static_cast<int>(v.fractions.size());
    const std::vector<std::size_t> begin = PartBegins(v);
    const std::vector<cudaEvent_t> landed = Upload(begin, kLanded, t);
    // early_bits: a third stream orders each part and reads its OR/AND as soon as it lands, beside the
    // sorts and merges of the parts before it on the stream (which waits for them before the part's sort).
    std::vector<cudaEvent_t> bits(parts, nullptr);
    if (v.early_bits) {
      CUDA_CHECK(cudaStreamWaitEvent(Native(bits_), t.Mark("accumulators reset", Native(stream_)), 0));
      for (int p = 0; p < parts; ++p) {
        CUDA_CHECK(cudaStreamWaitEvent(Native(bits_), landed[p], 0));
        OrderPartOn(p, begin[p], begin[p + 1] - begin[p], bits_);
        bits[p] = t.Mark(kBits[p], Native(bits_));
      }
    }
    bool prefix_in_runs = true;
    for (int p = 0; p < parts; ++p) {
      const std::size_t count = begin[p + 1] - begin[p];
      const char* host_bits = p + 1 == parts ? "last bits read (the engine's h2d ends)" : kBits[p];
      if (v.early_bits) {
        t.Wait(bits[p], host_bits);
        CUDA_CHECK(cudaStreamWaitEvent(Native(stream_), bits[p], 0));
      } else {
        t.Wait(landed[p], kLanded[p]);
        OrderPart(p, begin[p], count);
        t.Wait(t.Mark(kBits[p], Native(stream_)), host_bits);
      }
      int begin_bit = 0, end_bit = 0;
      BitRange(p, &begin_bit, &end_bit);
      const bool into_runs = p == 0 || prefix_in_runs;
      SortPart(begin[p], count, into_runs ? &runs_ : nullptr, begin_bit, end_bit);
      t.Mark(kSorted[p], Native(stream_));
      if (p == 0) continue;
      const DeviceBuffer& from = into_runs ? runs_ : landing_;
      const DeviceBuffer& to = into_runs ? landing_ : runs_;
      prefix_in_runs = !into_runs;
      if (v.sliced && p + 1 == parts) return SendSlices(from, to, begin[p], t);
      KERNELS_CHECK(k::MergeTwoSortedRuns(k::KeyWidth::k32, from.get(), begin[p], begin[p + 1], to.get(), stream_));
      t.Mark(kMerged[p], Native(stream_));
    }
    Egress(prefix_in_runs ? runs_ : landing_, t);
  }

  // The engine's SendSlices: the last merge in 8 slices, each copied out on the side stream once made.
  void SendSlices(const DeviceBuffer& from, const DeviceBuffer& to, std::size_t first, Timeline& t) {
    const std::size_t slice = std::max<std::size_t>(std::size_t{1} << 20, (n_ + 7) / 8);
    cudaEvent_t made = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&made, cudaEventDisableTiming));
    for (std::size_t at = 0; at < n_; at += slice) {
      const std::size_t end = std::min(n_, at + slice);
      KERNELS_CHECK(k::MergeTwoSortedRunsSlice(k::KeyWidth::k32, from.get(), first, n_, to.get(), at, end, stream_));
      KERNELS_CHECK(k::FromOrderedBitsAsync(k::KeyWidth::k32, k::KeyKind::kUnsigned, false, At(to, at), end - at,
                                            stream_));
      if (at == 0) t.Mark("first slice merged", Native(stream_));
      CUDA_CHECK(cudaEventRecord(made, Native(stream_)));
      CUDA_CHECK(cudaStreamWaitEvent(Native(side_), made, 0));
      KERNELS_CHECK(k::CopyAnyAsync(static_cast<std::byte*>(out_.data()) + at * 4, At(to, at), (end - at) * 4, side_));
    }
    t.Mark("merged A-C", Native(stream_));
    t.Mark("answer landed", Native(side_));
    KERNELS_CHECK(side_.Synchronize());
    KERNELS_CHECK(stream_.Synchronize());
    t.HostMark("done");
    CUDA_CHECK(cudaEventDestroy(made));
  }

  // No host wait until the end (or until the last part's bits, with check_last). Parts sort over all bits
  // into the buffer the sorted prefix lies in; each merge after the first part moves that prefix into the
  // other buffer (runs_ <-> spare_).
  void RunAsync(const Variant& v, Timeline& t) {
    static const char* kLanded[] = {"part 1 landed", "part 2 landed", "part 3 landed", "part 4 landed"};
    static const char* kSorted[] = {"part 1 sorted", "part 2 sorted", "part 3 sorted", "part 4 sorted"};
    static const char* kMerged[] = {"", "merged 1-2", "merged 1-3", "merged 1-4"};
    const int parts = static_cast<int>(v.fractions.size());
    const std::vector<std::size_t> begin = PartBegins(v);
    const std::vector<cudaEvent_t> landed = Upload(begin, kLanded, t);
    const DeviceBuffer* prefix = &runs_;
    const DeviceBuffer* other = &spare_;
    cudaEvent_t last_bits = nullptr;
    for (int p = 0; p < parts; ++p) {
      CUDA_CHECK(cudaStreamWaitEvent(Native(stream_), landed[p], 0));
      OrderPart(p, begin[p], begin[p + 1] - begin[p]);
      if (p + 1 == parts) last_bits = t.Mark("last bits read", Native(stream_));
      SortPart(begin[p], begin[p + 1] - begin[p], prefix, 0, 32);
      t.Mark(kSorted[p], Native(stream_));
      if (p == 0) continue;
      KERNELS_CHECK(
          k::MergeTwoSortedRuns(k::KeyWidth::k32, prefix->get(), begin[p], begin[p + 1], other->get(), stream_));
      t.Mark(kMerged[p], Native(stream_));
      std::swap(prefix, other);
    }
    if (v.check_last) t.Wait(last_bits, "last bits read");
    Egress(*prefix, t);
  }

  std::size_t n_;
  MemfdRegion in_, out_;
  std::vector<std::uint32_t> expected_;
  k::Stream stream_, side_, bits_;
  DeviceBuffer landing_, runs_, spare_, temp_, or_and_;
  std::size_t temp_bytes_ = 0;
  std::uint64_t* or_and_host_ = nullptr;
};

std::vector<Variant> AllVariants() {
  return {
      {"plain", true, true, false, {1.0}},
      {"split", true, true, false, {2.0 / 3, 1.0 / 3}},
      {"split-spin", false, true, false, {2.0 / 3, 1.0 / 3}},
      {"split3-spin", false, true, false, {1.0 / 2, 1.0 / 3, 1.0 / 6}},
      {"split3-sliced", false, true, false, {1.0 / 2, 1.0 / 3, 1.0 / 6}, true},
      {"split3-early", false, true, false, {1.0 / 2, 1.0 / 3, 1.0 / 6}, true, true},
      // Other part sizes: the sort and merge before the last part's copy ends should end under that copy.
      {"split3-quarters", false, true, false, {1.0 / 2, 1.0 / 4, 1.0 / 4}, true},
      {"split3-45-30-25", false, true, false, {0.45, 0.30, 0.25}, true},
      {"split3-50-30-20", false, true, false, {0.50, 0.30, 0.20}, true},
      {"split4-40-25-20-15", false, true, false, {0.40, 0.25, 0.20, 0.15}, true},
      {"split4-45-25-18-12", false, true, false, {0.45, 0.25, 0.18, 0.12}, true},
      {"async2", true, false, false, {2.0 / 3, 1.0 / 3}},
      {"async2-check", true, false, true, {2.0 / 3, 1.0 / 3}},
      {"async3-check", true, false, true, {1.0 / 2, 1.0 / 3, 1.0 / 6}},
  };
}

int Main(int argc, char** argv) {
  std::size_t count = std::size_t{1} << 24;
  int runs = 30;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--count") count = std::stoull(v) << (v.back() == 'M' ? 20 : v.back() == 'K' ? 10 : 0);
    else if (a == "--runs") runs = std::max(1, std::atoi(v.c_str()));
    else if (a == "--variants") only = "," + v + ",";
    else Die("usage: split_upload_probe [--count 16M] [--runs 30] [--variants plain,split,...]", 2);
  }
  std::vector<Variant> variants;
  for (const Variant& v : AllVariants()) {
    if (only.empty() || only.find("," + v.name + ",") != std::string::npos) variants.push_back(v);
  }
  Probe probe(count);
  Timeline blocking(true), spinning(false);
  std::vector<std::map<std::string, std::vector<double>>> marks(variants.size());
  std::vector<std::vector<std::string>> order(variants.size());
  for (int run = -3; run < runs; ++run) {  // three warm-up rounds
    for (std::size_t i = 0; i < variants.size(); ++i) {
      Timeline& t = variants[i].blocking ? blocking : spinning;
      probe.Run(variants[i], t);
      if (run == -3 && !probe.AnswerIsRight()) Die(variants[i].name + ": the answer differs from std::sort");
      if (run < 0) continue;
      for (const auto& [name, ms] : t.Collect()) {
        if (marks[i].count(name) == 0) order[i].push_back(name);
        marks[i][name].push_back(ms);
      }
    }
  }
  int device = 0;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("split_upload_probe: %zu uint32 keys, %d runs, %s; medians in ms\n", count, runs, prop.name);
  for (std::size_t i = 0; i < variants.size(); ++i) {
    std::printf("\n%s\n", variants[i].name.c_str());
    for (const std::string& name : order[i]) {
      std::vector<double>& v = marks[i][name];
      std::sort(v.begin(), v.end());
      std::printf("  %-46s %8.3f\n", name.c_str(), v[v.size() / 2]);
    }
  }
  return 0;
}

}  // namespace
}  // namespace gpusort::bench

int main(int argc, char** argv) { return gpusort::bench::Main(argc, argv); }
