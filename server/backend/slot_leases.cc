#include "server/backend/slot_leases.h"

#include <algorithm>
#include <iterator>

namespace gpusort {

SlotLeases::SlotLeases(int slots, int depth) : depth_(depth), states_(static_cast<std::size_t>(slots)) {
  for (int s = 0; s < slots; ++s) {
    states_[static_cast<std::size_t>(s)].events_held.assign(static_cast<std::size_t>(depth), false);
    ListIfTakable(s);
  }
}

SlotLeases::Grant SlotLeases::Acquire() {
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [&] { return !takable_.empty(); });
  auto pick = std::find_if(takable_.rbegin(), takable_.rend(),
                           [&](int s) { return states_[static_cast<std::size_t>(s)].jobs == 0; });
  if (pick == takable_.rend()) pick = takable_.rbegin();
  const int slot = *pick;
  takable_.erase(std::next(pick).base());
  State& state = states_[static_cast<std::size_t>(slot)];
  state.listed = false;
  state.queuing = true;
  ++state.jobs;
  // Fewer than depth jobs held it, so one of its depth sets is free.
  const auto free_set = std::find(state.events_held.begin(), state.events_held.end(), false);
  *free_set = true;
  return {slot, static_cast<int>(free_set - state.events_held.begin())};
}

void SlotLeases::StopQueuing(const Grant& grant) {
  if (depth_ == 1) return;  // the slot stays its job's alone; Return frees it
  bool listed = false;
  {
    std::lock_guard lock(mutex_);
    states_[static_cast<std::size_t>(grant.slot)].queuing = false;
    listed = ListIfTakable(grant.slot);
  }
  if (listed) freed_.notify_one();
}

void SlotLeases::Return(const Grant& grant, bool queuing) {
  bool listed = false;
  {
    std::lock_guard lock(mutex_);
    State& state = states_[static_cast<std::size_t>(grant.slot)];
    state.events_held[static_cast<std::size_t>(grant.events)] = false;
    --state.jobs;
    // A slot no job holds queues nothing (at depth 1, StopQueuing left the flag to this).
    if (queuing || state.jobs == 0) state.queuing = false;
    listed = ListIfTakable(grant.slot);
  }
  if (listed) freed_.notify_one();
}

bool SlotLeases::ListIfTakable(int slot) {
  State& state = states_[static_cast<std::size_t>(slot)];
  if (state.listed || state.queuing || state.jobs >= depth_) return false;
  takable_.push_back(slot);
  state.listed = true;
  return true;
}

}  // namespace gpusort
