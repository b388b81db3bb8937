// Which of a GPU's stream slots a job may take, and which of the slot's event sets it uses: the
// bookkeeping of DeviceContext::Acquire, apart from CUDA so that it is tested without a GPU
// (tests/cpu/slot_leases_test.cc).
//
// A slot holds at most `depth` jobs at once, of which at most one queues work on it; the others have
// queued all theirs and wait for their ends (StopQueuing). Each job it holds has its own event set, 0 to
// depth - 1. At depth 1 a job holds its slot from Acquire to Return, as before there was a depth.
#pragma once

#include <condition_variable>
#include <mutex>
#include <vector>

namespace gpusort {

class SlotLeases {
 public:
  struct Grant {
    int slot = -1;
    int events = -1;  // the slot's event set this job uses
  };

  SlotLeases(int slots, int depth);

  // Waits for a slot on which no job queues and fewer than `depth` jobs hold. A slot no job holds goes
  // first (a job queued behind another starts only when that one's work is done); among equals, the
  // one most recently freed.
  Grant Acquire();
  // The job of `grant` has queued all its work: another may queue on its slot, depth allowing (at depth 1
  // none can, and this takes no lock).
  void StopQueuing(const Grant& grant);
  // The job of `grant` ends; `queuing` when it never called StopQueuing.
  void Return(const Grant& grant, bool queuing);
  // Calls `fn` with each slot on which no job queues and fewer than `depth` jobs hold, under the lock
  // (so none is taken meanwhile).
  template <typename Fn>
  void ForEachTakable(Fn fn) {
    std::lock_guard lock(mutex_);
    for (int slot : takable_) fn(slot);
  }

 private:
  struct State {
    bool queuing = false;
    int jobs = 0;
    std::vector<bool> events_held;
    bool listed = false;  // on takable_
  };
  // Lists `slot` as takable where it is (under mutex_); true if it did.
  bool ListIfTakable(int slot);

  const int depth_;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<State> states_;
  std::vector<int> takable_;
};

}  // namespace gpusort
