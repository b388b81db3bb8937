#include "client/cli/progress_line.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace gpusort::cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kRedraw = std::chrono::milliseconds(100);
constexpr auto kTick = std::chrono::milliseconds(200);

class ProgressLine {
 public:
  explicit ProgressLine(std::FILE* out) : out_(out) {}
  ~ProgressLine() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
      if (waiting_) std::fprintf(out_, "\n");
    }
    wake_.notify_all();
    if (ticker_.joinable()) ticker_.join();
  }

  void Update(std::string_view stage, std::size_t done, std::size_t total) {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    if (waiting_ && stage != "send") {  // the answer started: the server's part is over
      waiting_ = false;
      std::fprintf(out_, "\n");
    }
    if (done < total && now - last_ < kRedraw) return;
    last_ = now;
    std::fprintf(out_, "\r%-7s %8.1f / %.1f MiB", std::string(stage).c_str(), done / 1048576.0, total / 1048576.0);
    if (done < total) return;
    std::fprintf(out_, "\n");
    if (stage == "send") StartWaiting(now);
  }

 private:
  // All sent: the ticker shows the server's time until the answer's first bytes.
  void StartWaiting(Clock::time_point now) {
    waiting_ = true;
    sent_at_ = now;
    if (!ticker_.joinable()) ticker_ = std::thread([this] { Tick(); });
    wake_.notify_all();
  }

  void Tick() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, kTick);
      if (stop_ || !waiting_) continue;
      const double seconds = std::chrono::duration<double>(Clock::now() - sent_at_).count();
      std::fprintf(out_, "\r%-7s %8.1f s", "server", seconds);
      std::fflush(out_);
    }
  }

  std::FILE* const out_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool waiting_ = false, stop_ = false;
  Clock::time_point last_{}, sent_at_{};
  std::thread ticker_;  // started at the first "all sent"; joined when the line goes
};

}  // namespace

std::function<void(std::string_view, std::size_t, std::size_t)> ProgressLineTo(std::FILE* out) {
  auto line = std::make_shared<ProgressLine>(out);
  return [line](std::string_view stage, std::size_t done, std::size_t total) { line->Update(stage, done, total); };
}

}  // namespace gpusort::cli
