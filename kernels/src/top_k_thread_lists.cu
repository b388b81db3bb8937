// THREAD_LISTS top-k (kernels/top_k.h): the write-up's method, repaired, kept so that users can compare
// it with SMALL_K and RADIX_SELECT.
//
// The write-up: each thread keeps a sorted list of the k best keys of its strided share of the row
// (insertion), the block merges its threads' lists, and a second pass merges the blocks' lists. It kept
// distinct values only, so any repeated key cost a slot of the answer. Here a list holds (key, position)
// pairs compared as pairs: equal keys are all kept and the earlier position ranks first, which is the
// tie rule, whatever order the entries arrive in.
//
// One block per slice of a row. Each thread inserts its entries (t, t + B, ...) into a list of k
// pairs in local memory; the lists go to shared memory (entry i of list s at i * B + s, so threads
// reading the same entry of their lists hit distinct banks) and are merged in a tree: at each level
// thread s < h merges lists s and s + h, keeping the first k. Rows longer than one slice take more
// passes of the same kernel over the previous pass's candidates, which carry their positions
// (top_k_levels.h). The answer comes out sorted either way.
#include <cstdint>
#include <vector>

#include "cuda_status.h"
#include "gpusort/kernels/top_k.h"
#include "top_k_levels.h"

namespace gpusort::kernels {
namespace thread_lists {
namespace {

constexpr std::size_t kSharedBudget = 48 * 1024;  // bytes of lists a block merges in shared memory

struct ListsJob {
  std::uint64_t rows = 0;
  std::uint32_t length = 0;       // entries per row read
  std::uint32_t slice = 0;        // entries per slice (a block)
  std::uint32_t slices = 1;       // per row
  std::uint32_t k = 0;
  bool last = false;
  void* out_keys = nullptr;       // last: the answer (null: not asked for); else the candidate list
  std::int64_t* out_positions = nullptr;     // last
  std::uint32_t* candidate_positions = nullptr;  // not last
  std::uint64_t out_stride = 0;   // not last: entries between rows of the candidate list
};

template <typename Key>
__device__ __forceinline__ bool Less(Key a, std::uint32_t pa, Key b, std::uint32_t pb) {
  return a < b || (a == b && pa < pb);
}

// kCap: the list capacity (k <= kCap); kReadPositions: the input is a candidate list with positions.
template <typename Key, int kCap, bool kReadPositions>
__global__ void ListsKernel(const Key* __restrict__ in, const std::uint32_t* __restrict__ in_positions,
                            ListsJob job) {
  extern __shared__ __align__(16) unsigned char shared[];
  const std::uint32_t threads = blockDim.x;
  const std::uint32_t t = threadIdx.x;
  Key* list_keys = reinterpret_cast<Key*>(shared);
  std::uint32_t* list_positions = reinterpret_cast<std::uint32_t*>(list_keys + threads * kCap);

  const std::uint64_t row = blockIdx.x / job.slices;
  const std::uint32_t slice = blockIdx.x % job.slices;
  const std::uint32_t start = slice * job.slice;
  const std::uint32_t rest = job.length - start;
  const std::uint32_t length = rest < job.slice ? rest : job.slice;
  const std::uint64_t row_start = row * job.length + start;
  const int k = static_cast<int>(job.k);
  constexpr Key kPadKey = static_cast<Key>(~Key{0});

  // The thread's list, sorted, padded with (max key, kNoPosition): after every real pair.
  Key keys[kCap];
  std::uint32_t positions[kCap];
  for (int i = 0; i < k; ++i) {
    keys[i] = kPadKey;
    positions[i] = top_k::kNoPosition;
  }
  for (std::uint32_t e = t; e < length; e += threads) {
    const Key key = in[row_start + e];
    const std::uint32_t p = kReadPositions ? in_positions[row_start + e] : start + e;
    if (Less(key, p, keys[k - 1], positions[k - 1])) {
      int j = k - 1;
      while (j > 0 && Less(key, p, keys[j - 1], positions[j - 1])) {
        keys[j] = keys[j - 1];
        positions[j] = positions[j - 1];
        --j;
      }
      keys[j] = key;
      positions[j] = p;
    }
  }
  for (int i = 0; i < k; ++i) {
    list_keys[i * threads + t] = keys[i];
    list_positions[i * threads + t] = positions[i];
  }

  // The tree: list s < h absorbs list s + h. Thread s alone reads and then writes list s at this
  // level (list s + h is written by nobody), so one barrier a level suffices.
  for (std::uint32_t h = threads / 2; h >= 1; h /= 2) {
    __syncthreads();
    if (t < h) {
      int a = 0, b = 0;
      for (int i = 0; i < k; ++i) {
        const Key ka = list_keys[a * threads + t], kb = list_keys[b * threads + t + h];
        const std::uint32_t pa = list_positions[a * threads + t], pb = list_positions[b * threads + t + h];
        if (Less(kb, pb, ka, pa)) {
          keys[i] = kb;
          positions[i] = pb;
          ++b;
        } else {
          keys[i] = ka;
          positions[i] = pa;
          ++a;
        }
      }
      for (int i = 0; i < k; ++i) {
        list_keys[i * threads + t] = keys[i];
        list_positions[i * threads + t] = positions[i];
      }
    }
  }
  __syncthreads();

  // List 0 holds the slice's best; its first min(k, length) are real.
  const std::uint32_t take = job.k < length ? job.k : length;
  Key* out_keys = static_cast<Key*>(job.out_keys);
  for (std::uint32_t i = t; i < take; i += threads) {
    const Key key = list_keys[i * threads];
    const std::uint32_t p = list_positions[i * threads];
    if (job.last) {
      if (out_keys != nullptr) out_keys[row * job.k + i] = key;
      if (job.out_positions != nullptr) job.out_positions[row * job.k + i] = p;
    } else {
      const std::uint64_t at = row * job.out_stride + std::uint64_t{slice} * job.k + i;
      out_keys[at] = key;
      job.candidate_positions[at] = p;
    }
  }
}

// Lists hold the next power of two >= k, from 8.
int CapacityFor(std::size_t k) {
  int cap = 8;
  while (static_cast<std::size_t>(cap) < k) cap *= 2;
  return cap;
}

// Threads a block: as many lists as fit the shared budget, 32 to 256.
std::uint32_t MaxThreads(int cap, KeyWidth width) {
  const std::size_t fit = kSharedBudget / (static_cast<std::size_t>(cap) * (top_k::KeyBytes(width) + 4));
  std::uint32_t threads = 32;
  while (threads * 2 <= fit && threads < 256) threads *= 2;
  return threads;
}

// Entries a thread inserts: enough that the merges (k steps a tree level) do not dominate.
std::size_t PerThread(int cap) { return cap < 8 ? 16 : 2 * static_cast<std::size_t>(cap); }

// Threads for a level reading `length` entries a row: enough for the entries, at most MaxThreads.
std::uint32_t ThreadsFor(std::size_t length, int cap, KeyWidth width) {
  const std::size_t want = (length + PerThread(cap) - 1) / PerThread(cap);
  std::uint32_t threads = 32;
  while (threads < want && threads < MaxThreads(cap, width)) threads *= 2;
  return threads;
}

struct Plan {
  std::vector<top_k::Level> levels;
  std::vector<std::uint32_t> threads;
  int cap = 8;
  std::size_t temp_bytes = 0;
};

Plan MakePlan(const TopKArgs& a) {
  Plan plan;
  plan.cap = CapacityFor(a.k);
  plan.levels = top_k::PlanLevels(a.row_length, a.k, [&](std::size_t length, bool) {
    const std::uint32_t threads = ThreadsFor(length, plan.cap, a.key_width);
    plan.threads.push_back(threads);
    return threads * PerThread(plan.cap);  // >= 32 * 2k: every level shrinks the lists
  });
  plan.temp_bytes = top_k::CandidateTempBytes(plan.levels, a.rows, a.key_width);
  return plan;
}

template <typename Key, int kCap, bool kRead>
Status Launch(const Key* in, const std::uint32_t* in_positions, const ListsJob& job, std::uint32_t threads,
              cudaStream_t stream) {
  const std::uint64_t blocks = job.rows * job.slices;
  const std::size_t shared = threads * kCap * (sizeof(Key) + 4);
  ListsKernel<Key, kCap, kRead><<<static_cast<unsigned>(blocks), threads, shared, stream>>>(in, in_positions, job);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("THREAD_LISTS top-k");
  return Status::Ok();
}

template <typename Key, bool kRead>
Status LaunchCap(int cap, const Key* in, const std::uint32_t* in_positions, const ListsJob& job,
                 std::uint32_t threads, cudaStream_t stream) {
  switch (cap) {
    case 8: return Launch<Key, 8, kRead>(in, in_positions, job, threads, stream);
    case 16: return Launch<Key, 16, kRead>(in, in_positions, job, threads, stream);
    case 32: return Launch<Key, 32, kRead>(in, in_positions, job, threads, stream);
    case 64: return Launch<Key, 64, kRead>(in, in_positions, job, threads, stream);
    case 128: return Launch<Key, 128, kRead>(in, in_positions, job, threads, stream);
    default: return Status(StatusCode::kInternal, "THREAD_LISTS top-k: no kernel for this list capacity");
  }
}

template <typename Key>
Status RunLevels(const TopKArgs& a, const Plan& plan, void* temp, cudaStream_t stream) {
  const top_k::CandidateBuffers buffers = top_k::CarveCandidates(plan.levels, a.rows, a.key_width, temp);
  const std::size_t count = plan.levels.size();
  for (std::size_t j = 0; j < count; ++j) {
    const top_k::Level& level = plan.levels[j];
    ListsJob job;
    job.rows = a.rows;
    job.length = static_cast<std::uint32_t>(level.length);
    job.slice = static_cast<std::uint32_t>(level.slice);
    job.slices = static_cast<std::uint32_t>(level.slices);
    job.k = static_cast<std::uint32_t>(a.k);
    job.last = j + 1 == count;
    if (job.last) {
      job.out_keys = a.out_keys;
      job.out_positions = a.out_positions;
    } else {
      job.out_keys = buffers.keys[j % 2];
      job.candidate_positions = buffers.positions[j % 2];
      job.out_stride = plan.levels[j + 1].length;
    }
    const Status s =
        j == 0 ? LaunchCap<Key, false>(plan.cap, static_cast<const Key*>(a.keys), nullptr, job, plan.threads[j], stream)
               : LaunchCap<Key, true>(plan.cap, static_cast<const Key*>(buffers.keys[(j - 1) % 2]),
                                      buffers.positions[(j - 1) % 2], job, plan.threads[j], stream);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace
}  // namespace thread_lists

Status ThreadListsTopKTempBytes(const TopKArgs& args, std::size_t* bytes) {
  if (bytes == nullptr) return Status(StatusCode::kInvalidArgument, "THREAD_LISTS top-k: bytes is null");
  *bytes = 0;
  GPUSORT_KERNELS_RETURN_IF_ERROR(top_k::CheckArgs(args, "THREAD_LISTS", "kThreadListsMaxK", kThreadListsMaxK, false));
  if (args.rows == 0) return Status::Ok();
  *bytes = thread_lists::MakePlan(args).temp_bytes;
  return Status::Ok();
}

Status ThreadListsTopK(const TopKArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(top_k::CheckArgs(args, "THREAD_LISTS", "kThreadListsMaxK", kThreadListsMaxK, true));
  if (args.rows == 0) return Status::Ok();
  const thread_lists::Plan plan = thread_lists::MakePlan(args);
  GPUSORT_KERNELS_RETURN_IF_ERROR(top_k::CheckTemp("THREAD_LISTS", temp, temp_bytes, plan.temp_bytes));
  if (args.out_keys == nullptr && args.out_positions == nullptr) return Status::Ok();  // nothing asked
  return args.key_width == KeyWidth::k32
             ? thread_lists::RunLevels<std::uint32_t>(args, plan, temp, Native(stream))
             : thread_lists::RunLevels<std::uint64_t>(args, plan, temp, Native(stream));
}

}  // namespace gpusort::kernels
