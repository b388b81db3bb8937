#include "server/service/caller_descriptor.h"

#include <fcntl.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string_view>
#include <thread>

#include "server/core/thread_name.h"

namespace gpusort {
namespace {

// The link text of /proc/self/fd/N: the kernel writes it from its own records (d_path), without asking
// the file's file system, so it cannot block on a FUSE daemon as fstat can.
std::string_view LinkText(int fd, char (&buffer)[256]) {
  char path[40];
  std::snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(path, buffer, sizeof(buffer) - 1);
  return n <= 0 ? std::string_view{} : std::string_view(buffer, static_cast<std::size_t>(n));
}

// One thread, started on first use and never joined: a close it is blocked in must not hold the server's
// shutdown. Its state is never freed, for the same reason (the thread may outlive every other object).
class Closer {
 public:
  static Closer& Get() {
    static Closer* closer = new Closer;
    return *closer;
  }
  void Add(UniqueFd fd) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(fd));
    }
    wake_.notify_one();
  }
  std::size_t pending() {
    std::lock_guard lock(mutex_);
    return queue_.size() + (closing_ ? 1 : 0);
  }

 private:
  Closer() {
    std::thread([this] { Run(); }).detach();
  }
  void Run() {
    NameThisThread("gs-fd-closer");
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return !queue_.empty(); });
      UniqueFd fd = std::move(queue_.front());
      queue_.pop_front();
      closing_ = true;
      lock.unlock();
      fd.reset();  // may block: nobody waits for it
      lock.lock();
      closing_ = false;
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<UniqueFd> queue_;
  bool closing_ = false;
};

}  // namespace

CallerDescriptorKind KindOfCallerDescriptor(int fd) {
  // Only shmem and hugetlbfs files take seals: for any other file F_GET_SEALS fails at once (EINVAL).
  if (fcntl(fd, F_GET_SEALS) >= 0) return CallerDescriptorKind::kSharedMemory;
  char buffer[256];
  const std::string_view link = LinkText(fd, buffer);
  // What CUDA exports device memory as (cuMemExportToShareableHandle): a descriptor of the NVIDIA driver.
  if (link.starts_with("/dev/nvidia") || link.starts_with("anon_inode:")) {
    return CallerDescriptorKind::kDeviceMemoryHandle;
  }
  return CallerDescriptorKind::kOther;
}

void CloseAside(UniqueFd fd) {
  if (fd.valid()) Closer::Get().Add(std::move(fd));
}

std::size_t DescriptorsClosingAside() { return Closer::Get().pending(); }

}  // namespace gpusort
