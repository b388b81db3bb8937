// Sorts whose keys travel over the data port beside a SortOnSockets call (sort.proto, "Sockets beside
// gRPC"). The call makes the job and its ticket; the data connections find the job by the ticket, write
// their parts into one PartedSortIngest side by side, wait for each other, and each sends back its
// range of the answer; the call ends when every part has been answered, or with the job's first failure.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpusort/v1/data_socket.h"
#include "server/backend/backend.h"
#include "server/transport/sort_in_parts.h"

namespace gpusort {

class SocketSortJob : public SortInParts {
 public:
  // Called once: with OK and the sort's report when every part has been answered, or with the job's
  // first failure.
  using EndFn = std::function<void(const absl::Status&, const ExecutionReport&)>;
  // Runs the sort where the server runs work (its workers, so that sorts from the data port share them
  // with every other call) and returns its status once it is done.
  using RunFn = std::function<absl::Status(std::function<absl::Status()>)>;

  SocketSortJob(const SortSpec& spec, uint64_t total_keys, uint32_t parts, std::unique_ptr<PartedSortIngest> ingest,
                std::string caller_host, Cancellation::Clock::time_point deadline, EndFn on_end,
                RunFn run = [](std::function<absl::Status()> sort) { return sort(); });

  const std::string& caller_host() const { return caller_host_; }
  // Whether the parts receive straight into the ingest's memory (PartedSortIngest::StartDirect, asked
  // once when the job is made).
  bool direct() const { return direct_; }

  // A connection takes part `index`, announcing `bytes` of keys. INVALID_ARGUMENT (and the job fails)
  // when the part does not exist, came already, or announces other than its range's bytes.
  absl::Status Claim(uint32_t index, uint64_t bytes);
  // (Moved: bytes of some part arrived now, so the job is not stalled.)
  // Whether the sort is running (the server's turn: the job is not stalled meanwhile).
  bool sorting() const { return sorting_.load(); }

  // Part `index` has all its keys in. Waits until every part has, the job fails, or `stop()` is true
  // (polled every 100 ms); OK in the first case, the job's failure otherwise.
  absl::Status ArriveAndWait(const std::function<bool()>& stop);
  // The first caller sorts; the others wait for it. The job's failure once it failed.
  absl::Status SortOnce();
  // Part `index`'s answer is sent; after the last, the job ends OK.
  void Answered(uint32_t index);
  // The job fails with `status` (the first failure wins; later ones, and any once it ended, change
  // nothing). Waiting parts wake and answer it.
  void Fail(const absl::Status& status);
  // OK while the job has not failed.
  absl::Status failure() const;

 private:
  void End(const absl::Status& status);  // with mutex_ not held

  const bool direct_;
  const std::string caller_host_;
  // The job's own (it may outlive its call by a part still inside it): the call's deadline, and
  // cancelled when the job fails.
  Cancellation cancellation_;
  std::atomic<bool> sorting_{false};

  mutable std::mutex mutex_;
  std::condition_variable all_arrived_;
  std::vector<bool> claimed_;
  uint32_t arrived_ = 0, answered_ = 0;
  absl::Status failed_;
  bool ended_ = false;
  EndFn on_end_;
  const RunFn run_;
};

// The jobs of the calls in progress, by ticket. A ticket is looked up by its first half and checked in
// constant time on its second, so that the time a lookup takes tells nothing of the half that is secret.
class SocketSorts {
 public:
  using Ticket = v1::data_socket::Ticket;

  // A new ticket for `job` (random, from the kernel). The caller removes it with Forget once its call
  // is done (which happens after the job has ended).
  absl::StatusOr<Ticket> Add(std::shared_ptr<SocketSortJob> job);
  void Forget(const Ticket& ticket);
  // The job `ticket` opens for a connection from `peer_host` ("ipv4:10.0.0.7"); PERMISSION_DENIED, with
  // one message for every reason (unknown, ended, another host), otherwise.
  absl::StatusOr<std::shared_ptr<SocketSortJob>> Find(const Ticket& ticket, const std::string& peer_host);
  // Fails every job none of whose parts moved for `idle`.
  void FailStalled(std::chrono::steady_clock::duration idle);

  // The data port callers are told (0 until the listener runs).
  void set_port(int port) { port_.store(port); }
  int port() const { return port_.load(); }

 private:
  struct Entry {
    std::array<std::byte, v1::data_socket::kTicketBytes / 2> secret_half;
    std::shared_ptr<SocketSortJob> job;
  };
  std::mutex mutex_;
  std::map<std::string, Entry> jobs_;  // by the ticket's first half
  std::atomic<int> port_{0};
};

// Whether a data connection from `peer_host` may use a ticket made for a call from `caller_host`: the
// same address, or loopback for a call that came over a Unix socket.
bool SameCallerHost(const std::string& caller_host, const std::string& peer_host);

}  // namespace gpusort
