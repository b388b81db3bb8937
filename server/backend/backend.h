// The engine seam: one implementation per kind of device (the CPU engine, the CUDA engine), and the
// router above them (auto_router.h), which is itself a Backend: the service talks to one Backend and
// never knows which engine serves. The service validates a request completely before it calls a
// backend, so backends may assume consistent specs and buffers; they still answer UNIMPLEMENTED for
// algorithms they do not have and honour cancellation.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/core/cancellation.h"
#include "server/core/execution_report.h"
#include "server/core/spec.h"

namespace gpusort {

// The keys of a streamed Sort, handed over piece by piece as they arrive, then sorted, then read back in
// runs. A backend that can use the time the stream takes does: the CUDA backend converts each piece and
// copies it to the GPU while later pieces are still on the wire, so that when the caller half-closes
// only the sort is left, and it copies each run of the answer back just before it goes out.
class SortIngest {
 public:
  virtual ~SortIngest() = default;
  // Appends whole keys (the stream call holds back a piece that ends inside a key).
  virtual absl::Status Append(std::span<const std::byte> keys) = 0;
  // After the last Append. Stages go into `report` as for Backend::Run.
  virtual absl::Status Sort(const Cancellation& cancellation, ExecutionReport& report) = 0;
  // Sorted keys [begin, end) into `keys` and, for SortPayload::kIndices, their input positions.
  virtual absl::Status Read(std::size_t begin, std::size_t end, std::byte* keys, int64_t* indices) = 0;
};

// The keys of one Sort that arrive on several streams at once (SortStream parts): the total is known
// up front and each part writes its own range from its own thread while the others write theirs, so
// that the bytes are not limited by what one connection carries.
class PartedSortIngest {
 public:
  virtual ~PartedSortIngest() = default;
  // Keys [first_key, first_key + keys.size() / key width); whole keys. Safe to call from several
  // threads at once for disjoint ranges.
  virtual absl::Status Write(std::size_t first_key, std::span<const std::byte> keys) = 0;
  // Once, after every range has been written.
  virtual absl::Status Sort(const Cancellation& cancellation, ExecutionReport& report) = 0;
  // As SortIngest::Read; safe to call from several threads at once after Sort.
  virtual absl::Status Read(std::size_t begin, std::size_t end, std::byte* keys, int64_t* indices) = 0;

  // Direct mode, for parts that arrive from sockets (the data port): the parts receive their keys
  // straight into DirectKeys() (on a GPU engine, pinned memory the GPU reads by DMA and converts on the
  // device) and say so with CommitDirect instead of Write; after Sort, ReadDirect puts each range of the
  // answer back into the same place, to be sent from there. StartDirect, before any part writes, turns it
  // on and says whether it could (no: Write and Read as usual). The defaults have no direct mode.
  virtual bool StartDirect() { return false; }
  virtual std::span<std::byte> DirectKeys() { return {}; }
  // Keys [first_key, first_key + count) of DirectKeys() are in place; safe from several threads at once
  // for disjoint ranges.
  virtual absl::Status CommitDirect(std::size_t /*first_key*/, std::size_t /*count*/) {
    return absl::FailedPreconditionError("this ingest has no direct mode");
  }
  // The sorted keys [begin, end) into DirectKeys()'s same range, and their positions into `indices` (with
  // SortPayload::kIndices); each range once, from several threads at once for disjoint ranges.
  virtual absl::Status ReadDirect(std::size_t /*begin*/, std::size_t /*end*/, int64_t* /*indices*/) {
    return absl::FailedPreconditionError("this ingest has no direct mode");
  }
};

// Keeps host memory registered with a device while it lives (see Backend::PinHostMemory).
class HostMemoryPin {
 public:
  virtual ~HostMemoryPin() = default;
};

// A caller's device memory (a device region, sort.proto "Device memory"), imported and mapped for the
// backend's GPU while this lives (see Backend::ImportDeviceMemory).
class DeviceMemoryImport {
 public:
  virtual ~DeviceMemoryImport() = default;
  // Device addresses in this process: the host never reads or writes them.
  virtual std::span<std::byte> bytes() const = 0;
};

// Where a job's arrays lie (sort.proto: in the request, in a shared-memory region, in a device region).
enum class Memory {
  kMessage,         // the server's own memory (a request's bytes, buffers it made): read it as often as needed
  kRegisteredHost,  // host memory given to PinHostMemory, shared with its owner, who may write it at any
                    // moment: the host reads each key once (below, RunInOwnMemory)
  kDeviceRegion,    // device memory ImportDeviceMemory gave: the host never touches it
};

// A whole-array Sort: sorts buffers.keys in place, or, with keys_in (registered memory and device
// regions only: which is that same range or does not overlap it), reads keys_in and writes the sorted
// keys to buffers.keys; fills values_out / indices_out as spec.payload asks. kValues only in
// Memory::kMessage.
struct SortWork {
  const SortSpec& spec;
  const SortBuffers& buffers;
  std::span<const std::byte> keys_in = {};
  // Where the keys are read from: keys_in, or buffers.keys when it is empty.
  std::span<const std::byte> source() const { return keys_in.empty() ? std::span<const std::byte>(buffers.keys) : keys_in; }
};

// A TopK: fills values_out / indices_out with each row's top-k, as the proto defines it.
struct TopKWork {
  const TopKSpec& spec;
  const TopKBuffers& buffers;
};

// One request for an engine: what to do, where its arrays lie, and the call's cancellation and report.
struct Job {
  std::variant<SortWork, TopKWork> work;
  Memory memory = Memory::kMessage;
  const Cancellation& cancellation;
  ExecutionReport& report;
};

// The keys a job works on (every row's), and their type.
std::size_t JobKeys(const Job& job);
DType JobDtype(const Job& job);

class Backend {
 public:
  virtual ~Backend() = default;

  virtual BackendKind kind() const = 0;
  // Human-readable device, e.g. "cpu (2 threads)"; goes into ExecutionInfo.device.
  virtual std::string device() const = 0;
  // Algorithms this backend can run for Sort and for TopK (AUTO is always accepted as well).
  virtual std::vector<Algorithm> sort_algorithms() const = 0;
  virtual std::vector<Algorithm> topk_algorithms() const = 0;
  // Whether an AUTO or CPU call of a few thousand keys costs tens of microseconds and never blocks, so
  // the service may run it on gRPC's own thread (--inline-max-keys). False unless a backend says so.
  virtual bool SmallCallsAreCheap() const { return false; }
  // The server's calls in flight (its admitted tickets), which a backend routing by load may read
  // (load-aware AUTO, auto_router.cc): the scheduler hands its count over once, at start. Shared, so
  // that a backend reading it never outlives what it reads. Ignored by default.
  virtual void WatchCallsInFlight(std::shared_ptr<const std::atomic<int>> /*calls*/) {}
  // Memory the backend holds on its devices, for the gpusort_device_memory_bytes gauge.
  struct MemoryReading {
    std::string device;  // "cuda:0"
    std::string kind;    // "pool_used", "stream_kept", "pool_reserved", "device_used", "device_total"
    double bytes = 0;
  };
  virtual std::vector<MemoryReading> memory() const { return {}; }
  // OK while the backend can serve. Otherwise UNAVAILABLE saying why, for good: the CUDA backend after a
  // sticky CUDA error (an illegal address, a launch failure, an uncorrectable ECC error) has lost its
  // GPU context, and only a new process gets it back. The service then refuses new calls with this
  // status and turns health NOT_SERVING, so that callers go to another replica and Kubernetes restarts
  // this one.
  virtual absl::Status Healthy() const { return absl::OkStatus(); }
  // The GPUs this backend serves from and whether each still can (OK, or why not): one entry per GPU
  // of a CUDA backend (gpu_set.h), none for the CPU engine. A server on several GPUs serves while one
  // does; health names each ("gpusort.v1.SortService/cuda:1") and gpusort_device_serving{device} says
  // the same to Prometheus.
  struct DeviceServing {
    std::string device;  // "cuda:1"
    absl::Status status;
  };
  virtual std::vector<DeviceServing> devices() const { return {}; }
  // How many of those stopped serving so far: cheap enough for the service to ask after every call and
  // read devices() only when it changes.
  virtual int devices_lost() const { return 0; }

  // The limits this backend publishes, checked by the service while it validates a request (before the
  // request queues, takes a stream slot or touches a device), against `count`, the keys of the whole
  // request (a parted Sort: of every part). INVALID_ARGUMENT saying the limit when over it; OK by
  // default. The backend may assume them in Sort, TopK and the rest, and checks again only where a
  // kernel would otherwise misbehave.
  virtual absl::Status CheckSortLimits(const SortSpec&, std::size_t /*count*/) const { return absl::OkStatus(); }
  virtual absl::Status CheckTopKLimits(const TopKSpec&, std::size_t /*count*/) const { return absl::OkStatus(); }

  // Runs `job`: a whole-array Sort or TopK, wherever its arrays lie. The engine's request operations
  // are this, StartSortIngest and StartPartedSortIngest; the merge across GPUs is the GPU set's
  // (gpu_set.h, MergeOnDevices).
  virtual absl::Status Run(const Job& job) = 0;
  // Registers host memory the server mapped from a shared-memory region, once, so that requests on it
  // can copy to and from the device without staging. nullptr: this backend needs nothing of the kind.
  virtual absl::StatusOr<std::unique_ptr<HostMemoryPin>> PinHostMemory(std::span<std::byte>) {
    return std::unique_ptr<HostMemoryPin>();
  }
  // Imports `bytes` of the device memory a caller exported as the descriptor `fd` (not taken). This
  // default refuses: only a backend with a GPU has device regions.
  virtual absl::StatusOr<std::unique_ptr<DeviceMemoryImport>> ImportDeviceMemory(int /*fd*/, std::size_t /*bytes*/) {
    return absl::FailedPreconditionError("device regions need a GPU server; this one serves from the CPU");
  }
  // A streamed Sort's keys, taken as they arrive; nullptr when this backend does no better than being
  // handed the whole array (the stream call then collects it and calls Sort). Never for kValues.
  virtual std::unique_ptr<SortIngest> StartSortIngest(const SortSpec&) { return nullptr; }
  // A Sort of `total_keys` keys that arrive in parts (see PartedSortIngest). Never kValues. This default
  // gathers them in host memory and calls Sort; the CUDA backend copies each part to the GPU as it comes.
  virtual absl::StatusOr<std::unique_ptr<PartedSortIngest>> StartPartedSortIngest(const SortSpec& spec,
                                                                                  std::size_t total_keys);
};

std::string_view BackendKindName(BackendKind kind);  // "cpu", "cuda"

// A Sort or a TopK as one Job, for callers with the arrays at hand.
absl::Status RunSort(Backend& backend, const SortSpec& spec, const SortBuffers& buffers,
                     const Cancellation& cancellation, ExecutionReport& report, Memory memory = Memory::kMessage,
                     std::span<const std::byte> keys_in = {});
absl::Status RunTopK(Backend& backend, const TopKSpec& spec, const TopKBuffers& buffers,
                     const Cancellation& cancellation, ExecutionReport& report, Memory memory = Memory::kMessage);

// How an engine that works only on arrays of its own memory (the CPU engine; the CUDA engine's host
// paths; test stand-ins) runs any job with `sort` and `top_k`, which get the job's spec and buffers:
//   - Memory::kMessage: as they are;
//   - Memory::kRegisteredHost: on private copies, the keys read once and the answer written once. The
//     owner of shared memory may write it while this runs, and a host sort reads its input more than
//     once: the CPU sort reads a histogram, then scatters as it laid out, and keys that changed in
//     between would send the scatter past its buffers. A Sort's keys_in is read, buffers.keys written;
//   - Memory::kDeviceRegion: refused (FAILED_PRECONDITION): only a GPU engine imports device memory.
using SortInOwnMemory = std::function<absl::Status(const SortSpec&, const SortBuffers&)>;
using TopKInOwnMemory = std::function<absl::Status(const TopKSpec&, const TopKBuffers&)>;
absl::Status RunOnPrivateCopies(const Job& job, const SortInOwnMemory& sort, const TopKInOwnMemory& top_k);
template <typename SortFn, typename TopKFn>
absl::Status RunInOwnMemory(const Job& job, SortFn&& sort, TopKFn&& top_k) {
  if (job.memory != Memory::kMessage) return RunOnPrivateCopies(job, sort, top_k);
  if (const auto* work = std::get_if<SortWork>(&job.work)) return sort(work->spec, work->buffers);
  const TopKWork& work = std::get<TopKWork>(job.work);
  return top_k(work.spec, work.buffers);
}

// UNIMPLEMENTED naming what was asked and what this backend has, for a consistent message.
absl::Status AlgorithmUnavailable(std::string_view method, Algorithm asked,
                                  const std::vector<Algorithm>& available,
                                  std::string_view backend);

}  // namespace gpusort
