// What gRPC orders between its threads, told to ThreadSanitizer. Debian's gRPC is not instrumented: it
// hands a call from one thread to the next through absl::Mutex, its own atomics and futexes, none of
// which TSan sees, so everything our code did before a hand-off looks unordered with what it does after,
// on another thread. These mark the hand-offs that gRPC's API guarantees, on the object handed over:
//   - a reactor's operation (StartRead, StartWrite, Finish...) happens before its callback (OnReadDone,
//     OnWriteDone, OnDone): StartOnGrpc(reactor, operation) starts one, AcquireFromGrpc(reactor) first
//     thing in each callback;
//   - a service built before the server starts happens before every handler call:
//     ReleaseToGrpc(service) once it is ready, AcquireFromGrpc(service) first thing in each handler.
//   - a reactor's construction happens before its OnCancel (gRPC binds the reactor first), but nothing
//     later does: OnCancel acquires a token of its own (the call's Cancellation object), released once
//     when the reactor is handed to gRPC, and what OnCancel touches must be synchronized on its own;
//   - every call's OnDone happens before the server's Shutdown returns: OnDone releases the
//     ServiceCore (after deleting the call), and the server acquires it after Shutdown.
// In builds without TSan both are empty inline functions.
#pragma once

#include "server/core/tsan_hand_off.h"

namespace gpusort {

inline void ReleaseToGrpc(const void* handed_over) { TsanRelease(handed_over); }
inline void AcquireFromGrpc(const void* handed_over) { TsanAcquire(handed_over); }

// Starts one of a reactor's operations: the release, then the operation with this thread's accesses
// hidden from TSan. Why hidden: the inline part of every Start* and Finish (grpcpp's header) loads the
// reactor's stream pointer after the release and before gRPC's own code takes the call on, so TSan would
// see that load race with the delete that follows OnDone on another thread (it did, in CI: Finish on a
// worker, the last Release on another worker). Nothing may touch the reactor after `start` returns: the
// call may be deleted by then.
template <typename Operation>
void StartOnGrpc(const void* reactor, Operation&& start) {
  ReleaseToGrpc(reactor);
  TsanIgnoreAccessesBegin();
  start();
  TsanIgnoreAccessesEnd();
}

}  // namespace gpusort
