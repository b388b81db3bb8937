#include "server/transport/data_port/socket_sorts.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace gpusort {
namespace {

constexpr std::size_t kHalf = v1::data_socket::kTicketBytes / 2;

absl::Status RandomBytes(std::byte* out, std::size_t size) {
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = getrandom(out + got, size - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::InternalError(std::string("no random bytes for a ticket: ") + std::strerror(errno));
    got += static_cast<std::size_t>(n);
  }
  return absl::OkStatus();
}

std::string FirstHalf(const SocketSorts::Ticket& ticket) {
  return std::string(reinterpret_cast<const char*>(ticket.data()), kHalf);
}

// Compares every byte whatever the first difference, so that the time taken says nothing of where it is.
bool SameSecret(const std::byte* a, const std::byte* b) {
  unsigned difference = 0;
  for (std::size_t i = 0; i < kHalf; ++i) difference |= std::to_integer<unsigned>(a[i] ^ b[i]);
  return difference == 0;
}

// gRPC writes an IPv6 peer's brackets as "[...]" or, in some versions, "%5B...%5D"; an IPv4 caller on a
// dual-stack socket may show as "ipv6:[::ffff:a.b.c.d]".
std::string NormalHost(std::string host) {
  for (auto [from, to] : {std::pair{"%5B", "["}, std::pair{"%5D", "]"}}) {
    for (std::size_t at; (at = host.find(from)) != std::string::npos;) host.replace(at, 3, to);
  }
  constexpr std::string_view kMapped = "ipv6:[::ffff:";
  if (host.starts_with(kMapped) && host.ends_with(']') && host.find('.') != std::string::npos) {
    host = "ipv4:" + host.substr(kMapped.size(), host.size() - kMapped.size() - 1);
  }
  return host;
}

bool IsLoopbackHost(const std::string& host) { return host.starts_with("ipv4:127.") || host == "ipv6:[::1]"; }

}  // namespace

bool SameCallerHost(const std::string& caller_host, const std::string& peer_host) {
  const std::string caller = NormalHost(caller_host), peer = NormalHost(peer_host);
  // Loopback is this host whichever address names it (a client may reach gRPC over 127.0.0.1 and the
  // data port over ::1).
  if (caller.starts_with("unix:") || IsLoopbackHost(caller)) return IsLoopbackHost(peer);
  return caller == peer;
}

SocketSortJob::SocketSortJob(const SortSpec& spec, uint64_t total_keys, uint32_t parts,
                             std::unique_ptr<PartedSortIngest> ingest, std::string caller_host,
                             Cancellation::Clock::time_point deadline, EndFn on_end, RunFn run)
    : SortInParts(spec, total_keys, parts, std::move(ingest)),
      direct_(this->ingest().StartDirect()),
      caller_host_(std::move(caller_host)),
      cancellation_(deadline),
      claimed_(parts, false),
      on_end_(std::move(on_end)),
      run_(std::move(run)) {}

absl::Status SocketSortJob::Claim(uint32_t index, uint64_t bytes) {
  absl::Status refused;
  {
    std::lock_guard lock(mutex_);
    if (!failed_.ok()) return failed_;
    if (index >= parts()) {
      refused = absl::InvalidArgumentError("part " + std::to_string(index) + " is not below the call's " +
                                           std::to_string(parts()) + " parts");
    } else if (claimed_[index]) {
      refused = absl::InvalidArgumentError("part " + std::to_string(index) + " came twice");
    } else if (const uint64_t expected = (Begin(index + 1) - Begin(index)) * ElementSize(spec().dtype);
               bytes != expected) {
      refused = absl::InvalidArgumentError("part " + std::to_string(index) + " announces " + std::to_string(bytes) +
                                           " bytes; its range holds " + std::to_string(expected));
    } else {
      claimed_[index] = true;
    }
  }
  // A part that does not fit means the caller's parts are broken: the others would wait for it in vain.
  if (!refused.ok()) Fail(refused);
  Moved();
  return refused;
}

absl::Status SocketSortJob::ArriveAndWait(const std::function<bool()>& stop) {
  std::unique_lock lock(mutex_);
  if (failed_.ok() && ++arrived_ == parts()) all_arrived_.notify_all();
  while (failed_.ok() && arrived_ < parts()) {
    if (stop()) return absl::UnavailableError("the server is stopping");
    all_arrived_.wait_for(lock, std::chrono::milliseconds(100));
  }
  return failed_;
}

absl::Status SocketSortJob::SortOnce() {
  if (absl::Status f = failure(); !f.ok()) return f;
  return RunSortOnce([this](ExecutionReport& report) {
    sorting_.store(true);  // the server's turn: not a stall, however long it takes
    const absl::Status sorted = run_([&] { return ingest().Sort(cancellation_, report); });
    sorting_.store(false);
    Moved();
    if (!sorted.ok()) Fail(sorted);
    return sorted;
  });
}

void SocketSortJob::Answered(uint32_t /*index*/) {
  bool last = false;
  {
    std::lock_guard lock(mutex_);
    last = failed_.ok() && ++answered_ == parts() && !ended_;
    if (last) ended_ = true;
  }
  if (last) on_end_(absl::OkStatus(), sort_report());  // complete: every part sorted before answering
}

void SocketSortJob::Fail(const absl::Status& status) {
  {
    std::lock_guard lock(mutex_);
    if (!failed_.ok() || ended_) return;
    failed_ = status.ok() ? absl::UnknownError("a part failed") : status;
    ended_ = true;
    all_arrived_.notify_all();
  }
  cancellation_.Cancel();  // a sort in progress stops at its next check
  on_end_(failed_, ExecutionReport{});
}

absl::Status SocketSortJob::failure() const {
  std::lock_guard lock(mutex_);
  return failed_;
}

absl::StatusOr<SocketSorts::Ticket> SocketSorts::Add(std::shared_ptr<SocketSortJob> job) {
  Ticket ticket;
  Entry entry{.secret_half = {}, .job = std::move(job)};
  std::lock_guard lock(mutex_);
  do {
    if (absl::Status s = RandomBytes(ticket.data(), ticket.size()); !s.ok()) return s;
  } while (jobs_.contains(FirstHalf(ticket)));
  std::memcpy(entry.secret_half.data(), ticket.data() + kHalf, kHalf);
  jobs_.emplace(FirstHalf(ticket), std::move(entry));
  return ticket;
}

void SocketSorts::Forget(const Ticket& ticket) {
  std::shared_ptr<SocketSortJob> job;  // released outside the lock: it may free device memory
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(FirstHalf(ticket));
  if (it == jobs_.end() || !SameSecret(it->second.secret_half.data(), ticket.data() + kHalf)) return;
  job = std::move(it->second.job);
  jobs_.erase(it);
}

absl::StatusOr<std::shared_ptr<SocketSortJob>> SocketSorts::Find(const Ticket& ticket, const std::string& peer_host) {
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(FirstHalf(ticket));
  if (it != jobs_.end() && SameSecret(it->second.secret_half.data(), ticket.data() + kHalf) &&
      SameCallerHost(it->second.job->caller_host(), peer_host)) {
    return it->second.job;
  }
  return absl::PermissionDeniedError(
      "the ticket opens no call in progress from this host (wrong, ended, or made for another host)");
}

void SocketSorts::FailStalled(std::chrono::steady_clock::duration idle) {
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::shared_ptr<SocketSortJob>> stalled;
  {
    std::lock_guard lock(mutex_);
    for (auto& [_, entry] : jobs_) {
      if (!entry.job->sorting() && now - entry.job->LastMoved() >= idle) stalled.push_back(entry.job);
    }
  }
  for (auto& job : stalled) {
    job->Fail(absl::DeadlineExceededError("no part of this sort moved for " +
                                          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(idle).count()) +
                                          " s (--stream-idle-timeout)"));
  }
}

}  // namespace gpusort
