#include "server/service/sort_batcher.h"

#include <utility>

#include "server/core/thread_name.h"

namespace gpusort {
namespace {

constexpr std::size_t kMaxBatchKeys = std::size_t{1} << 20;

}  // namespace

SortBatcher::SortBatcher(Backend& backend, Metrics& metrics, RunFn run, SortBatcherOptions options)
    : backend_(backend), metrics_(metrics), run_(std::move(run)), options_(options) {
  if (enabled()) timer_ = std::thread([this] { TimerLoop(); });
}

SortBatcher::~SortBatcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (timer_.joinable()) timer_.join();
}

SortBatcher::Key SortBatcher::KeyOf(const SortSpec& spec) {
  return {static_cast<int>(spec.dtype), static_cast<int>(spec.order), spec.stable, static_cast<int>(spec.payload),
          static_cast<int>(spec.algorithm)};
}

bool SortBatcher::Eligible(const SortSpec& spec, std::size_t count) const {
  // A batch sorts each request as one array: requests of several rows are not batched.
  return enabled() && count > 0 && count <= options_.max_keys && spec.payload != SortPayload::kValues &&
         !spec.segmented();
}

void SortBatcher::Submit(const SortSpec& spec, const SortBuffers& buffers, ExecutionReport* report, DoneFn done) {
  const auto now = std::chrono::steady_clock::now();
  Open full;
  bool launch = false;
  {
    std::lock_guard lock(mutex_);
    auto [it, fresh] = open_.try_emplace(KeyOf(spec));
    Open& batch = it->second;
    if (fresh) {
      batch.spec = spec;
      batch.deadline = now + std::chrono::microseconds(options_.delay_us);
    }
    batch.requests.push_back({buffers, report, std::move(done), now});
    batch.keys += buffers.count;
    ++waiting_;
    if (static_cast<int>(batch.requests.size()) >= options_.max_requests || batch.keys >= kMaxBatchKeys) {
      full = std::move(batch);
      open_.erase(it);
      waiting_ -= full.requests.size();
      launch = true;
    }
    metrics_.batch_queue_depth().Set(static_cast<double>(waiting_));
    // The timer may need an earlier deadline. Told under the lock: once the lock is let go the batch may
    // run, answer its callers and the server stop, destroying changed_ (ThreadSanitizer saw a notify
    // made after the unlock race the destructor).
    if (!launch) changed_.notify_one();
  }
  if (launch) Launch(std::move(full));
}

void SortBatcher::Launch(Open batch) {
  const auto now = std::chrono::steady_clock::now();
  metrics_.batch_size().Observe(static_cast<double>(batch.requests.size()));
  for (const Waiting& w : batch.requests) {
    const double waited = std::chrono::duration<double>(now - w.arrived).count();
    metrics_.batch_wait().Observe(waited);
    w.report->AddStage(Stage::kBatchWait, waited);
  }
  run_([this, batch = std::move(batch)]() mutable {
    std::vector<BatchItem> items;
    items.reserve(batch.requests.size());
    for (Waiting& w : batch.requests) items.push_back({w.buffers, w.report});
    Cancellation never;  // one caller's cancel must not fail the others; each is checked on reply
    const absl::Status status = backend_.SortBatch(batch.spec, items, never);
    for (Waiting& w : batch.requests) w.done(status);
  });
}

void SortBatcher::TimerLoop() {
  NameThisThread("gs-batcher");
  std::unique_lock lock(mutex_);
  for (;;) {
    if (stopping_ && open_.empty()) return;
    auto next = std::chrono::steady_clock::time_point::max();
    for (const auto& [key, batch] : open_) next = std::min(next, batch.deadline);
    if (!stopping_) {
      if (next == std::chrono::steady_clock::time_point::max()) {
        changed_.wait(lock);
        continue;
      }
      if (std::chrono::steady_clock::now() < next) {
        changed_.wait_until(lock, next);
        continue;
      }
    }
    // Launch every batch whose time has come (all of them when stopping).
    std::vector<Open> due;
    const auto now = std::chrono::steady_clock::now();
    for (auto it = open_.begin(); it != open_.end();) {
      if (stopping_ || it->second.deadline <= now) {
        waiting_ -= it->second.requests.size();
        due.push_back(std::move(it->second));
        it = open_.erase(it);
      } else {
        ++it;
      }
    }
    metrics_.batch_queue_depth().Set(static_cast<double>(waiting_));
    lock.unlock();
    for (Open& batch : due) Launch(std::move(batch));
    lock.lock();
  }
}

}  // namespace gpusort
