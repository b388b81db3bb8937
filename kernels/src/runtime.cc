#include "gpusort/kernels/runtime.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>

#include "cuda_status.h"

namespace gpusort::kernels {

namespace {
std::atomic<std::int64_t> event_wait_spin_us{kDefaultEventWaitSpin.count()};

// Threads polling an event now. Polling answers a short wait within microseconds while cores are idle;
// under load, many pollers take cores and the driver's locks from the threads that launch work. Past
// MostEventPollers() a waiter sleeps at once. On the two-GPU mix (64 in flight) the cap took the server
// from 23 cores to 18.5 and from 37.0-37.6K req/s to 38.4-39.0K; every waiter asleep (spin 0) served
// 42.6-46.5K, and one caller's calls 25% fewer than with polling. One poller a GPU served 4-10% more
// than a quarter of the cores on one GPU and on two (BENCHMARKS.md, issue 19).
std::atomic<unsigned> event_pollers{0};
std::atomic<unsigned> most_event_pollers{0};  // 0: QuarterOfTheCores()
unsigned QuarterOfTheCores() {
  static const unsigned quarter = std::max(1u, std::thread::hardware_concurrency() / 4);
  return quarter;
}
bool StartPolling() {
  const unsigned most = MostEventPollers();
  unsigned now = event_pollers.load(std::memory_order_relaxed);
  while (now < most) {
    if (event_pollers.compare_exchange_weak(now, now + 1, std::memory_order_relaxed)) return true;
  }
  return false;
}
}  // namespace

void SetEventWaitSpin(std::chrono::microseconds spin) {
  event_wait_spin_us.store(std::max<std::int64_t>(0, spin.count()), std::memory_order_relaxed);
}
std::chrono::microseconds EventWaitSpin() {
  return std::chrono::microseconds(event_wait_spin_us.load(std::memory_order_relaxed));
}
void SetMostEventPollers(unsigned most) { most_event_pollers.store(most, std::memory_order_relaxed); }
unsigned MostEventPollers() {
  const unsigned most = most_event_pollers.load(std::memory_order_relaxed);
  return most == 0 ? QuarterOfTheCores() : most;
}
unsigned EventPollersNow() { return event_pollers.load(std::memory_order_relaxed); }

int CountDevices(std::string* why_none) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();  // clear it: the process may still run on the CPU backend
    if (why_none) *why_none = std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
    return 0;
  }
  if (count == 0 && why_none) *why_none = "the CUDA runtime sees no device";
  return count;
}

Status GetDeviceProperties(int ordinal, DeviceProperties* out) {
  cudaDeviceProp prop{};
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, ordinal));
  out->ordinal = ordinal;
  out->name = prop.name;
  out->compute_major = prop.major;
  out->compute_minor = prop.minor;
  out->multiprocessors = prop.multiProcessorCount;
  out->total_memory = prop.totalGlobalMem;
  return Status::Ok();
}

Status UseDevice(int ordinal) {
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal));
  return Status::Ok();
}

Status EnablePeerAccess(int device, int peer) {
  int can = 0;
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaDeviceCanAccessPeer(&can, device, peer));
  if (!can) return Status(StatusCode::kUnavailable, "the GPUs cannot reach each other's memory directly");
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  const cudaError_t error = cudaDeviceEnablePeerAccess(peer, 0);
  if (error == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // not an error here: clear it so that the next call does not see it
    return Status::Ok();
  }
  GPUSORT_CUDA_RETURN_IF_ERROR(error);
  return Status::Ok();
}

Status DeviceMemoryInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(free_bytes, total_bytes));
  return Status::Ok();
}

// ---- Stream
Stream::~Stream() {
  if (handle_) IgnoreCudaError(cudaStreamDestroy(static_cast<cudaStream_t>(handle_)));
}
Stream::Stream(Stream&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
Stream& Stream::operator=(Stream&& other) noexcept {
  std::swap(handle_, other.handle_);
  return *this;
}
Status Stream::Create(Stream* out) {
  cudaStream_t stream = nullptr;
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  *out = Stream();
  out->handle_ = stream;
  return Status::Ok();
}
Status Stream::Synchronize() const {
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(static_cast<cudaStream_t>(handle_)));
  return Status::Ok();
}
Status Stream::WaitFor(const Event& event) const {
  GPUSORT_CUDA_RETURN_IF_ERROR(
      cudaStreamWaitEvent(static_cast<cudaStream_t>(handle_), static_cast<cudaEvent_t>(event.native()), 0));
  return Status::Ok();
}

// ---- Event
Event::~Event() {
  if (handle_) IgnoreCudaError(cudaEventDestroy(static_cast<cudaEvent_t>(handle_)));
}
Event::Event(Event&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
Event& Event::operator=(Event&& other) noexcept {
  std::swap(handle_, other.handle_);
  return *this;
}
namespace {
Status CreateEvent(unsigned flags, void** handle) {
  cudaEvent_t event = nullptr;
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, flags));
  *handle = event;
  return Status::Ok();
}
}  // namespace
Status Event::Create(Event* out) {
  *out = Event();
  // Blocking sync: past its spin (EventWaitSpin), a waiting worker thread sleeps instead of spinning a core.
  return CreateEvent(cudaEventBlockingSync, &out->handle_);
}
Status Event::CreateForTiming(Event* out) {
  *out = Event();
  return CreateEvent(cudaEventDefault, &out->handle_);
}
Status Event::Record(const Stream& stream) {
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaEventRecord(static_cast<cudaEvent_t>(handle_), Native(stream)));
  return Status::Ok();
}
Status Event::Synchronize() const {
  const auto event = static_cast<cudaEvent_t>(handle_);
  const std::chrono::microseconds spin = EventWaitSpin();
  if (spin.count() > 0 && StartPolling()) {
    struct StopPolling {
      ~StopPolling() { event_pollers.fetch_sub(1, std::memory_order_relaxed); }
    } stop_polling;
    const auto deadline = std::chrono::steady_clock::now() + spin;
    for (;;) {
      const cudaError_t state = cudaEventQuery(event);
      if (state == cudaSuccess) return Status::Ok();
      if (state != cudaErrorNotReady) GPUSORT_CUDA_RETURN_IF_ERROR(state);
      // "Not ready" is no error: leave none behind for the next launch's check (PyTorch clears it too).
      (void)cudaGetLastError();
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::yield();
    }
  }
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(event));
  return Status::Ok();
}
Status Event::SecondsSince(const Event& start, double* seconds) const {
  float ms = 0;
  GPUSORT_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start.handle_),
                                                    static_cast<cudaEvent_t>(handle_)));
  *seconds = ms / 1e3;
  return Status::Ok();
}

}  // namespace gpusort::kernels
