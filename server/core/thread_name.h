// Names the calling thread, so that top -H, /proc/PID/task/*/comm, gdb and the GPU machine's probes
// (scripts/thread-cpu.py) tell the server's own threads apart from gRPC's, TBB's and CUDA's. Linux keeps
// at most 15 characters of a name; the server's all start with "gs-".
#pragma once

#include <pthread.h>

namespace gpusort {

inline void NameThisThread(const char* name) { (void)pthread_setname_np(pthread_self(), name); }

}  // namespace gpusort
