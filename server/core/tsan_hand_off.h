// Hand-offs through libraries that ThreadSanitizer cannot see (Debian's gRPC and TBB are not
// instrumented), told to TSan as a release on one thread and an acquire on the next, on the address of
// the object handed over. Empty without TSan. gRPC's uses: server/transport/grpc/grpc_hand_off.h; TBB's:
// server/backend/cpu/parallel.h.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define GPUSORT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GPUSORT_TSAN 1
#endif
#endif

#ifdef GPUSORT_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
#endif

namespace gpusort {

inline void TsanRelease([[maybe_unused]] const void* handed_over) {
#ifdef GPUSORT_TSAN
  __tsan_release(const_cast<void*>(handed_over));
#endif
}

inline void TsanAcquire([[maybe_unused]] const void* handed_over) {
#ifdef GPUSORT_TSAN
  __tsan_acquire(const_cast<void*>(handed_over));
#endif
}

// Hides this thread's memory accesses from TSan until the matching end (synchronization still counts).
inline void TsanIgnoreAccessesBegin() {
#ifdef GPUSORT_TSAN
  __tsan_ignore_thread_begin();
#endif
}

inline void TsanIgnoreAccessesEnd() {
#ifdef GPUSORT_TSAN
  __tsan_ignore_thread_end();
#endif
}

}  // namespace gpusort
