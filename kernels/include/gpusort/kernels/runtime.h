// Devices, streams and events, without CUDA types: each object owns its CUDA handle and exposes it only
// as an opaque pointer that the .cu files behind this API turn back into the CUDA type.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "gpusort/kernels/status.h"

namespace gpusort::kernels {

struct DeviceProperties {
  int ordinal = 0;
  std::string name;            // e.g. "NVIDIA H100 80GB HBM3"
  int compute_major = 0;
  int compute_minor = 0;
  int multiprocessors = 0;
  std::size_t total_memory = 0;  // bytes
};

// How many CUDA devices this process can use; 0 with `why_none` filled when there are none (no driver,
// no device, CUDA_VISIBLE_DEVICES empty, ...).
int CountDevices(std::string* why_none);
Status GetDeviceProperties(int ordinal, DeviceProperties* out);
// Makes `ordinal` the calling thread's current device (every thread that launches work calls this).
Status UseDevice(int ordinal);
// Lets `device`'s kernels and copies reach `peer`'s memory directly (cudaDeviceEnablePeerAccess), once
// per pair for the process; already enabled is OK. kUnavailable where the two cannot reach each other:
// copies between them then pass through host memory, which the runtime does on its own.
Status EnablePeerAccess(int device, int peer);
// Free and total device memory as the driver sees it (cudaMemGetInfo).
Status DeviceMemoryInfo(std::size_t* free_bytes, std::size_t* total_bytes);

// How long a thread waiting on an Event (Event::Synchronize) polls before it sleeps until the GPU wakes
// it, for the whole process (default kDefaultEventWaitSpin; 0: sleep at once). A sleeping waiter wakes
// 0.08-0.12 ms after the event on the H200 (split_upload_probe), which a 16M-key Sort from shared memory
// paid four times; polling, yielding the core between polls, answers within microseconds and costs a
// core only while nothing else wants it. Waits longer than the spin sleep after it, so a long copy holds
// no core. At most MostEventPollers() threads poll at once; a waiter past them sleeps at once.
// (Stream::Synchronize keeps CUDA's own policy: with fewer contexts than cores, it spins.)
inline constexpr std::chrono::microseconds kDefaultEventWaitSpin{2000};
void SetEventWaitSpin(std::chrono::microseconds spin);
std::chrono::microseconds EventWaitSpin();
// How many threads may poll at once, and how many do now. SetMostEventPollers(0) (the default): a quarter
// of the host's cores, at least one. The server sets one for each GPU it serves unless told otherwise.
void SetMostEventPollers(unsigned most);
unsigned MostEventPollers();
unsigned EventPollersNow();

class Event;

// A non-blocking CUDA stream.
class Stream {
 public:
  Stream() = default;
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  static Status Create(Stream* out);
  Status Synchronize() const;
  // Work queued on this stream after this call waits until `event`, as last recorded, has completed
  // (cudaStreamWaitEvent): how a second stream may use memory allocated on the first.
  Status WaitFor(const Event& event) const;
  void* native() const { return handle_; }  // cudaStream_t

 private:
  void* handle_ = nullptr;
};

// A CUDA event that can time work on a stream.
class Event {
 public:
  Event() = default;
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  static Status Create(Event* out);
  // An event that only times work (SecondsSince) and is never waited on (a wait on it follows CUDA's own
  // policy, and may spin): no blocking sync, which only a waited-on event needs. Made so, the two events
  // that time a job's kernels lifted issue 18's mix 3% on one GPU and 6% on two (BENCHMARKS.md, "fewer
  // host waits").
  static Status CreateForTiming(Event* out);
  Status Record(const Stream& stream);
  // Until the work before the last Record has completed: polls for EventWaitSpin(), then sleeps.
  Status Synchronize() const;
  // Seconds from `start` to this event; both must have been recorded and completed.
  Status SecondsSince(const Event& start, double* seconds) const;
  void* native() const { return handle_; }  // cudaEvent_t

 private:
  void* handle_ = nullptr;
};

}  // namespace gpusort::kernels
