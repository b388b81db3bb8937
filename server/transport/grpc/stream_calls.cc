#include "server/transport/grpc/stream_calls.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <mutex>
#include <memory>
#include <span>
#include <string>

#include "server/core/status_macros.h"
#include "server/transport/grpc/grpc_hand_off.h"
#include "server/transport/grpc/grpc_status.h"
#include "server/service/caller_identity.h"
#include "server/service/open_call.h"
#include "server/transport/request_decode.h"
#include "server/transport/sort_parts.h"

namespace gpusort {
namespace {

// The life cycle both streaming RPCs share: admit; read messages until the caller half-closes,
// handing each to Accept(); run the job on a worker; write the answer chunk by chunk; finish once.
// Subclasses say what a message means (Accept), what the whole must satisfy (EndOfInput), how to
// run it (Execute) and how to cut the answer (NextChunk).
template <typename Request, typename Response>
class StreamCall : public grpc::ServerBidiReactor<Request, Response>, public StreamWatchdog::Watched {
 public:
  using Clock = StreamWatchdog::Clock;

  StreamCall(ServiceCore& core, grpc::CallbackServerContext* context, std::string_view method)
      : core_(core), context_(context), call_(method, context), open_(core, call_, *context) {}

  void OnCancel() override {
    AcquireFromGrpc(&call_.cancellation);  // released when Begin handed the call to gRPC
    call_.cancellation.Cancel();
    OnFailure(absl::CancelledError("the caller cancelled"));
  }
  // gRPC is done with the call. A worker may still be inside it (a GPU copy of the input, a chunk of
  // the answer): each holds the call while it runs, and whoever lets go last deletes it. gRPC's
  // callback thread never waits for a worker.
  void OnDone() override {
    AcquireFromGrpc(this);
    core_.watchdog().Forget(this);
    Release();
  }

  // Reads run back to back: each message is taken in (Accept) and the next read starts at once, while
  // a worker does what the message left to do (the GPU copy) off gRPC's threads, one piece at a time.
  void OnReadDone(bool ok) override {
    AcquireFromGrpc(this);
    std::unique_lock lock(work_mutex_);
    if (replied() || (input_ended_ && ok)) return;  // answered, or ended by the watchdog
    if (!ok) {  // the caller half-closed, or the call broke
      if (context_->IsCancelled()) {
        failed_ = absl::CancelledError("the caller cancelled");
      } else if (first_message_) {
        failed_ = absl::InvalidArgumentError("the stream ended before its first message, which must carry options");
      }
      input_ended_ = true;
      phase_ = Phase::kServerWork;  // the input is complete: the server's turn
      if (working_) return;  // the worker ends the input once it has caught up
      lock.unlock();
      return FinishInput();
    }
    Moved();
    absl::Status status = first_message_ ? AdmitOnFirstMessage() : absl::OkStatus();
    if (status.ok()) {
      status = Accept(request_, first_message_);
    } else {
      Refused(request_, status);
    }
    first_message_ = false;
    request_.Clear();
    if (!status.ok()) {
      failed_ = status;
      input_ended_ = true;  // no more reads
      if (working_) return;
      lock.unlock();
      return FinishInput();
    }
    const bool start_worker = !working_ && HasPendingWork();
    if (start_worker) working_ = true;
    lock.unlock();
    if (start_worker) Hold();  // before StartRead: OnDone may follow the read, and must not delete it
    StartOnGrpc(this, [&] { this->StartRead(&request_); });
    if (start_worker) {
      core_.scheduler().EnqueueStep(call_, [this] {
        Work();
        Release();  // the worker's very last touch of the call
      }, /*stamp_queue=*/false);
    }
  }

  void OnWriteDone(bool ok) override {
    AcquireFromGrpc(this);
    if (!ok) return Reply(absl::CancelledError("the caller stopped reading the answer"));
    Moved();
    if (ChunksNeedWorker()) return AnswerChunkWritten();
    WriteNext();
  }

 protected:
  // Starts the call; subclasses' constructors call it last. A stream takes a ticket of --max-inflight
  // only once its first message is in: until then it holds one of the waiting streams' tickets, for at
  // most --stream-first-message-timeout, so that streams that never send cannot keep others out.
  void Begin() {
    ReleaseToGrpc(&call_.cancellation);  // construction happens before OnCancel
    absl::Status status = open_.WaitForFirstMessage();
    // Refused: Trailers-Only, so that the caller's retry policy may still retry it (as unary calls).
    if (!status.ok()) return Reply(status);
    core_.watchdog().Watch(this);
    StartOnGrpc(this, [&] { this->StartRead(&request_); });
  }

  // Where the call is, for the watchdog: whose turn it is, and so which timeout applies.
  enum class Phase {
    kFirstMessage,  // the caller's: --stream-first-message-timeout from arrival
    kReading,       // the caller's: --stream-idle-timeout from the last message
    kServerWork,    // the server's: no timeout (the caller's own deadline still applies)
    kPartsWait,     // the sibling parts': --stream-idle-timeout from the last time any part moved
    kWriting,       // the caller's (reading the answer): --stream-idle-timeout from the last chunk
  };

  // When the sibling parts of a parted Sort last moved (the part subclass says).
  virtual Clock::time_point PartsLastMoved() const { return Clock::time_point::max(); }
  // The parts stopped moving while this one waited: fail the whole Sort, which resumes this part too.
  virtual void PartsStalled(const absl::Status&) {}
  void set_phase(Phase phase) { phase_ = phase; }

  // Takes in one message (its bytes may be moved out of it). Called with work_mutex_ held.
  virtual absl::Status Accept(Request& message, bool first) = 0;
  // The first message was refused admission (overload, drain) with `status`.
  virtual void Refused(const Request&, const absl::Status&) {}
  // Work Accept left for a worker (with work_mutex_ held), and doing it (without: it takes what it
  // needs under work_mutex_ itself). Only one DoPendingWork runs at a time.
  virtual bool HasPendingWork() const { return false; }
  virtual absl::Status DoPendingWork() { return absl::OkStatus(); }
  virtual absl::Status EndOfInput() = 0;  // after the last message; sets call_.keys
  virtual absl::Status Execute() = 0;
  // Fills `out` with the next chunk and says whether more follow.
  virtual absl::Status NextChunk(Response* out, bool* more) = 0;
  // Whether NextChunk may block (it copies from the GPU), so it must not run on gRPC's threads.
  virtual bool ChunksNeedWorker() const { return false; }
  // Runs the job (Execute, then the answer) once the input is complete. A part of a parted Sort waits
  // for its sibling parts here first.
  virtual void Schedule(std::function<void()> run) { core_.scheduler().EnqueueStep(call_, std::move(run)); }
  // The call failed or was cancelled (may come more than once, and from any thread).
  virtual void OnFailure(const absl::Status&) {}

  // Adds `bytes` to what the call holds, within the server's request limit.
  absl::Status Reserve(std::size_t bytes) {
    received_bytes_ += bytes;
    if (received_bytes_ <= core_.config().max_request_bytes) return absl::OkStatus();
    return absl::ResourceExhaustedError("the request exceeds the server's limit of " +
                                        std::to_string(core_.config().max_request_bytes) +
                                        " bytes");
  }

  // Response chunk size: the caller's choice within the message limit, else 1 MiB. Not a flag (issue 42):
  // no chunk size from 256 KiB to 16 MiB made a streamed 16M sort faster (docs/benchmarks-log.md, "Streaming chunk
  // size and HTTP/2 window" in docs/benchmarks-log.md).
  static constexpr std::size_t kDefaultChunkBytes = 1u << 20;
  std::size_t ChunkBytes(uint32_t asked) const {
    const std::size_t limit = core_.config().max_message_bytes / 2;
    return std::min<std::size_t>(asked != 0 ? asked : kDefaultChunkBytes, limit);
  }

  ServiceCore& core_;
  grpc::CallbackServerContext* context_;
  CallState call_;
  OpenCall open_;  // the call's tickets and its completion
  std::mutex work_mutex_;  // between the reads (gRPC's threads) and the pending work (a worker)

  // Who holds the call: gRPC until OnDone, and each worker task inside it (Work, FillAnswerChunks).
  // The last to let go deletes it, on its own thread.
  void Hold() { holds_.fetch_add(1, std::memory_order_relaxed); }
  void Release() {
    if (holds_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    ServiceCore* core = &core_;
    delete this;
    ReleaseToGrpc(core);  // the server's shutdown acquires it before the core goes
  }

 private:
  Clock::time_point WatchDeadline() const override {
    const auto idle = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(core_.config().stream_idle_timeout_seconds));
    switch (phase_.load()) {
      case Phase::kFirstMessage:
        return call_.arrival + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                   core_.config().stream_first_message_timeout_seconds));
      case Phase::kReading:
      case Phase::kWriting: return Clock::time_point(Clock::duration(last_moved_.load())) + idle;
      case Phase::kPartsWait: {
        const Clock::time_point moved = PartsLastMoved();
        return moved == Clock::time_point::max() ? moved : moved + idle;
      }
      case Phase::kServerWork: break;
    }
    return Clock::time_point::max();
  }

  void WatchExpired() override {
    const std::string idle = FormatSeconds(core_.config().stream_idle_timeout_seconds);
    const Phase phase = phase_.load();
    if (phase == Phase::kPartsWait) {  // failing the job resumes this part, which then answers ABORTED
      return PartsStalled(absl::AbortedError("no part of this sort sent anything for " + idle +
                                             " s (--stream-idle-timeout)"));
    }
    call_.cancellation.Cancel();
    if (phase == Phase::kWriting) {
      // A write the caller does not read stays in flight, and Finish must not race the writes; only
      // cancelling the call ends it. The caller, not reading, sees CANCELLED; the log and the metrics
      // say why.
      {
        std::lock_guard lock(answer_mutex_);
        expired_ = absl::DeadlineExceededError("the caller read none of the answer for " + idle +
                                               " s (--stream-idle-timeout)");
      }
      return context_->TryCancel();
    }
    const absl::Status status =
        phase == Phase::kFirstMessage
            ? absl::DeadlineExceededError("no first message within " +
                                          FormatSeconds(core_.config().stream_first_message_timeout_seconds) +
                                          " s of the stream's start (--stream-first-message-timeout)")
            : absl::DeadlineExceededError("the stream sent no message for " + idle + " s (--stream-idle-timeout)");
    {
      // Still the caller's turn? (The input may have ended meanwhile: then the server works and answers.)
      std::lock_guard lock(work_mutex_);
      if (phase_ != Phase::kFirstMessage && phase_ != Phase::kReading) return;
      if (failed_.ok()) failed_ = status;
      input_ended_ = true;  // a read that completes now is ignored (OnReadDone), so nothing is admitted
    }
    Reply(status);
  }

  // On a worker: does pending work until none is left; if the input has ended meanwhile, ends it.
  void Work() {
    for (;;) {
      bool finish = false;
      {
        std::lock_guard lock(work_mutex_);
        if (!failed_.ok() || !HasPendingWork()) {
          if (!input_ended_) {  // the next read starts the worker again
            working_ = false;
            return;
          }
          finish = true;
        }
      }
      if (finish) {
        FinishInput();
        return WorkerIdle();
      }
      absl::Status status = call_.cancellation.Check();
      if (status.ok()) status = DoPendingWork();
      if (!status.ok()) {
        {
          std::lock_guard lock(work_mutex_);
          failed_ = status;
        }
        // Answer now rather than read the rest; the read in flight then fails and is ignored.
        Reply(status);
        return WorkerIdle();
      }
    }
  }

  // The input worker is done with the input (it still holds the call until Work returns).
  void WorkerIdle() {
    std::lock_guard lock(work_mutex_);
    working_ = false;
  }

  // Whether the call's work holds its ticket of --max-inflight through a job it joins instead of the
  // call itself (a part of a Sort in parts).
  virtual bool TicketIsTheJobs(const Request&) const { return false; }

  // The caller sent a message or took a chunk of the answer.
  void Moved() { last_moved_ = Clock::now().time_since_epoch().count(); }

  // The first message is in: trade the waiting stream's ticket for one of --max-inflight.
  absl::Status AdmitOnFirstMessage() {
    // A part of a Sort in parts: the job holds the one ticket (sort_parts.h); the part gives back its
    // waiting stream's ticket and joins, and the part that starts the job takes the job's (JoinParts).
    RETURN_IF_ERROR(open_.Start(TicketIsTheJobs(request_) ? OpenCall::Ticket::kJobPart : OpenCall::Ticket::kCall));
    phase_ = Phase::kReading;
    // Only now: a refusal goes out Trailers-Only, which the caller's retry policy may retry.
    context_->AddInitialMetadata("x-request-id", call_.request_id);
    return absl::OkStatus();
  }

  static std::string FormatSeconds(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", seconds);
    return text;
  }

  // Once: every message is in and worked on (or the input failed).
  void FinishInput() {
    if (!failed_.ok()) return Reply(failed_);
    call_.report.AddStage(Stage::kReceive, receiving_.Seconds());
    absl::Status status = EndOfInput();
    if (!status.ok()) return Reply(status);
    Schedule([this] {
      absl::Status run = call_.cancellation.Check();
      if (run.ok()) run = Execute();
      if (!run.ok()) return Reply(run);
      sending_ = StageClock();
      Moved();
      phase_ = Phase::kWriting;
      if (!ChunksNeedWorker()) return WriteNext();
      {
        std::lock_guard lock(answer_mutex_);
        filling_ = true;
      }
      Hold();  // the filler may write the last chunk, and the call may be done before it returns
      FillAnswerChunks();
      Release();
    });
  }

  // Answers whose chunks come off the GPU are double-buffered: a worker fills the next chunk while
  // gRPC writes the current one, so the copy back hides behind the wire.
  struct AnswerSlot {
    Response message;
    bool ready = false;
    bool last = false;
  };

  // On a worker: fills free slots in order until both are full or the answer is done.
  void FillAnswerChunks() {
    for (;;) {
      int index;
      {
        std::lock_guard lock(answer_mutex_);
        if (!more_chunks_ || slots_[fill_].ready || replied()) {
          filling_ = false;
          return;
        }
        index = fill_;
      }
      AnswerSlot& slot = slots_[index];
      slot.message.Clear();
      bool more = false;
      absl::Status chunk = NextChunk(&slot.message, &more);
      if (!chunk.ok()) {
        Reply(chunk);
        std::lock_guard lock(answer_mutex_);
        more_chunks_ = false;
        filling_ = false;
        return;
      }
      bool write_now;
      {
        std::lock_guard lock(answer_mutex_);
        slot.ready = true;
        slot.last = !more;
        more_chunks_ = more;
        fill_ ^= 1;
        write_now = !write_in_flight_ && index == write_;
        if (write_now) write_in_flight_ = true;
      }
      if (write_now) WriteAnswerSlot(index);  // the last one finishes the call; our hold keeps it alive
    }
  }

  // A chunk went out: the next one goes if it is ready, and the filler restarts if it had stopped.
  void AnswerChunkWritten() {
    int next = -1;
    bool start_filler = false;
    {
      std::lock_guard lock(answer_mutex_);
      slots_[write_].ready = false;
      write_ ^= 1;
      write_in_flight_ = false;
      if (slots_[write_].ready) {
        write_in_flight_ = true;
        next = write_;
      }
      if (!filling_ && more_chunks_) start_filler = filling_ = true;
    }
    if (start_filler) {
      Hold();  // taken on gRPC's thread, inside OnWriteDone: before OnDone can come
      core_.scheduler().EnqueueStep(call_, [this] {
        FillAnswerChunks();
        Release();
      }, /*stamp_queue=*/false);
    }
    if (next >= 0) WriteAnswerSlot(next);
  }

  void WriteAnswerSlot(int index) {
    AnswerSlot& slot = slots_[index];
    if (!slot.last) return StartOnGrpc(this, [&] { this->StartWrite(&slot.message); });
    call_.report.AddStage(Stage::kSend, sending_.Seconds());
    if (replied_.exchange(true)) return;
    core_.FillInfo(call_, slot.message.mutable_info());
    (void)open_.Finish(absl::OkStatus());  // OK comes back as it went
    StartOnGrpc(this, [&] { this->StartWriteAndFinish(&slot.message, grpc::WriteOptions(), grpc::Status::OK); });
  }

  bool replied() const { return replied_.load(); }

  void WriteNext() {
    response_.Clear();
    bool more = false;
    absl::Status chunk = NextChunk(&response_, &more);
    if (!chunk.ok()) return Reply(chunk);
    if (more) return StartOnGrpc(this, [&] { this->StartWrite(&response_); });
    call_.report.AddStage(Stage::kSend, sending_.Seconds());
    if (replied_.exchange(true)) return;
    core_.FillInfo(call_, response_.mutable_info());
    (void)open_.Finish(absl::OkStatus());  // OK comes back as it went
    StartOnGrpc(this, [&] { this->StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK); });
  }

  // Finishes the call with `status`, once; later calls do nothing.
  void Reply(const absl::Status& status) {
    if (!status.ok()) OnFailure(status);
    if (replied_.exchange(true)) return;
    absl::Status expired;
    {
      std::lock_guard lock(answer_mutex_);
      expired = expired_;
    }
    // The watchdog cancelled a caller that stopped reading: the log and the metrics say why; the caller
    // sees the cancellation. Otherwise the answer as Complete gives it (with the request id for INTERNAL).
    const absl::Status answer = open_.Finish(expired.ok() ? status : expired);
    const grpc::Status finish = ToGrpcStatus(expired.ok() ? answer : status);
    StartOnGrpc(this, [&] { this->Finish(finish); });
  }

  Request request_;
  Response response_;
  std::mutex answer_mutex_;  // the double-buffered answer: filler (a worker) and writer (gRPC)
  AnswerSlot slots_[2];
  int fill_ = 0, write_ = 0;       // which slot is filled next, and written next
  bool filling_ = false;           // a worker is in FillAnswerChunks (answer_mutex_)
  bool write_in_flight_ = false;
  bool more_chunks_ = true;        // NextChunk has not yet said it gave the last one
  bool first_message_ = true;
  std::atomic<int> holds_{1};  // gRPC's, until OnDone; see Hold and Release
  bool working_ = false;      // a worker is doing pending work (guarded by work_mutex_)
  bool input_ended_ = false;  // no more reads will come (guarded by work_mutex_)
  absl::Status failed_;       // the input's first failure (guarded by work_mutex_)
  std::atomic<bool> replied_{false};
  std::atomic<Phase> phase_{Phase::kFirstMessage};
  absl::Status expired_;  // why the watchdog cancelled a call that stopped reading (answer_mutex_)
  std::atomic<Clock::rep> last_moved_{0};  // Clock ticks when the caller last moved (Moved)
  std::size_t received_bytes_ = 0;
  StageClock receiving_;
  StageClock sending_;  // from the first answer chunk to the last (the GPU copies back ride on it)
};

// Cuts [first, first + n) into runs of elements that each fit in about chunk_bytes.
struct ChunkCursor {
  std::size_t count = 0;  // one past the last element
  std::size_t elements_per_chunk = 1;
  std::size_t next = 0;

  void Reset(std::size_t n, std::size_t chunk_bytes, std::size_t bytes_per_element, std::size_t first = 0) {
    count = first + n;
    elements_per_chunk = std::max<std::size_t>(1, chunk_bytes / std::max<std::size_t>(1, bytes_per_element));
    next = first;
  }
  // The next run [begin, end); true when more runs follow it.
  bool Take(std::size_t* begin, std::size_t* end) {
    *begin = next;
    *end = std::min(count, next + elements_per_chunk);
    next = *end;
    return next < count;
  }
};

void AppendSlice(const std::string& from, std::size_t begin, std::size_t end, std::size_t width,
                 std::string* to) {
  to->assign(from, begin * width, (end - begin) * width);
}

class SortStreamCall final
    : public StreamCall<v1::SortStreamRequest, v1::SortStreamResponse> {
 public:
  SortStreamCall(ServiceCore& core, grpc::CallbackServerContext* context)
      : StreamCall(core, context, "SortStream") {
    Begin();
  }

 private:
  absl::Status Accept(v1::SortStreamRequest& m, bool first) override {
    absl::Status status = AcceptMessage(m, first);
    if (!status.ok() && first && job_ == nullptr) Refused(m, status);
    if (status.ok() && job_ != nullptr) job_->Moved();
    return status;
  }

  // A part refused before it joined its job must still fail the job, or its siblings would wait for it.
  void Refused(const v1::SortStreamRequest& m, const absl::Status& status) override {
    if (m.has_part()) core_.parted_sorts().Abandon(PeerHost(context_->peer()), PartRefOf(m.part()), status);
  }

  bool TicketIsTheJobs(const v1::SortStreamRequest& m) const override { return m.has_part(); }

  static PartRef PartRefOf(const v1::StreamPart& part) {
    return PartRef{.job = part.job(), .index = part.index(), .count = part.count(), .total_keys = part.total_keys()};
  }

  absl::Status AcceptMessage(v1::SortStreamRequest& m, bool first) {
    if (first) {
      if (!m.has_options())
        return absl::InvalidArgumentError("the first SortStream message must carry options");
      ASSIGN_OR_RETURN(spec_, DecodeSortOptions(m.options()));
      call_.dtype_label = DTypeName(spec_.dtype);
      call_.requested = spec_.algorithm;
      RETURN_IF_ERROR(core_.CheckSortAlgorithm(spec_.algorithm));
      chunk_bytes_ = ChunkBytes(m.response_chunk_bytes());
      if (m.has_part()) {
        RETURN_IF_ERROR(JoinParts(m.part()));
      } else {
        ingest_ = core_.backend().StartSortIngest(spec_);
      }
    } else if (m.has_options() || m.response_chunk_bytes() != 0 || m.has_part()) {
      return absl::InvalidArgumentError(
          "options and part may only be sent in the first SortStream message; they came again");
    }
    RETURN_IF_ERROR(Reserve(m.keys().size() + m.values().size()));
    key_bytes_ += m.keys().size();
    values_.append(m.values());
    if (job_ != nullptr && key_bytes_ > part_keys_ * ElementSize(spec_.dtype)) {
      return absl::InvalidArgumentError("part " + std::to_string(part_index_) + " carries more than its " +
                                        std::to_string(part_keys_) + " keys");
    }
    if (!Streaming()) {
      keys_.append(m.keys());
    } else if (pending_.empty()) {
      pending_.swap(*m.mutable_keys());  // no copy: the message is cleared before the next read
    } else {
      pending_.append(m.keys());  // after a piece that ended inside a key
    }
    return absl::OkStatus();
  }

  // Whether keys go to the backend as they come (one ingest, or this part's range of a parted one).
  bool Streaming() const { return ingest_ != nullptr || job_ != nullptr; }

  absl::Status JoinParts(const v1::StreamPart& part) {
    const PartRef ref = PartRefOf(part);
    ASSIGN_OR_RETURN(std::shared_ptr<PartedSort> job,
                     core_.parted_sorts().Join(PeerHost(context_->peer()), spec_, ref, core_.backend(),
                                               core_.config().max_request_bytes,
                                               [this] { return open_.JobTicket(); }));
    part_index_ = ref.index;
    part_first_ = job->Begin(ref.index);
    part_keys_ = job->Begin(ref.index + 1) - part_first_;
    call_.joint_record = job->joint_record();
    std::lock_guard lock(job_mutex_);
    job_ = std::move(job);
    return absl::OkStatus();
  }

  bool HasPendingWork() const override { return Streaming() && !pending_.empty(); }

  // Hands the whole keys received so far to the ingest; a piece of a key waits for the rest of it.
  absl::Status DoPendingWork() override {
    std::string piece;
    {
      std::lock_guard lock(work_mutex_);
      piece.swap(pending_);
    }
    if (carry_.empty()) {
      carry_.swap(piece);
    } else {
      carry_.append(piece);
    }
    const std::size_t width = ElementSize(spec_.dtype);
    const std::size_t whole = carry_.size() / width * width;
    const auto keys = std::as_bytes(std::span(carry_.data(), whole));
    if (job_ != nullptr) {
      RETURN_IF_ERROR(job_->ingest().Write(part_first_ + part_written_, keys));
      part_written_ += whole / width;
    } else {
      RETURN_IF_ERROR(ingest_->Append(keys));
    }
    carry_.erase(0, whole);
    return absl::OkStatus();
  }

  absl::Status EndOfInput() override {
    // A part holds any range of the rows: the rows divide the whole Sort, checked when it started.
    SortSpec sizes = spec_;
    if (job_ != nullptr) {
      sizes.rows = 1;
      sizes.segment_offsets = nullptr;
    }
    ASSIGN_OR_RETURN(call_.keys, CheckSortSizes(sizes, key_bytes_, values_.size()));
    if (job_ != nullptr && call_.keys != part_keys_) {
      return absl::InvalidArgumentError("part " + std::to_string(part_index_) + " carried " +
                                        std::to_string(call_.keys) + " keys; its range of the " +
                                        std::to_string(job_->total_keys()) + " holds " +
                                        std::to_string(part_keys_));
    }
    // A part's whole Sort was checked when its first part started the job (PartedSorts::Join).
    if (job_ == nullptr) RETURN_IF_ERROR(core_.CheckSortLimits(spec_, call_.keys));
    return absl::OkStatus();
  }

  // A part waits until every part of its Sort has all its keys in; the waiting shows as "parts_wait".
  // Then one part's step sorts on a worker while the others wait for it off the workers
  // (PartedSort::AfterSort); once it is done with the sort (whatever happened to its call), they run.
  void Schedule(std::function<void()> run) override {
    if (job_ == nullptr) return StreamCall::Schedule(std::move(run));
    set_phase(Phase::kPartsWait);
    job_->Arrive([this, run = std::move(run), clock = StageClock()]() mutable {
      set_phase(Phase::kServerWork);
      call_.report.AddStage(Stage::kPartsWait, clock.Seconds());
      job_->AfterSort([this, run = std::move(run), job = job_](bool runs_sort) mutable {
        if (!runs_sort) return core_.scheduler().EnqueueStep(call_, std::move(run));
        // `this` may be gone once run() returns (the call answered): only the job is touched after it.
        core_.scheduler().EnqueueStep(call_, [run = std::move(run), job = std::move(job)] {
          run();
          job->Settled();
        });
      });
    });
  }

  Clock::time_point PartsLastMoved() const override { return job_->LastMoved(); }
  void PartsStalled(const absl::Status& status) override { job_->Fail(part_index_, status); }

  // A part that fails before the sort fails its whole Sort, so that the other parts do not wait forever.
  void OnFailure(const absl::Status& status) override {
    std::shared_ptr<PartedSort> job;
    {
      std::lock_guard lock(job_mutex_);
      job = job_;
    }
    if (job != nullptr) job->Fail(part_index_, status);
  }

  absl::Status Execute() override {
    const std::size_t n = call_.keys;
    if (job_ != nullptr) {
      const absl::Status sorted = job_->SortOnce(call_.cancellation, call_.report);
      job_->Settled();  // the parts kept off the workers go now, without waiting for this one's answer
      RETURN_IF_ERROR(sorted);
      cursor_.Reset(n, chunk_bytes_, BytesPerElement(), part_first_);
      return absl::OkStatus();
    }
    if (ingest_ != nullptr) {
      RETURN_IF_ERROR(ingest_->Sort(call_.cancellation, call_.report));
      cursor_.Reset(n, chunk_bytes_, BytesPerElement());
      return absl::OkStatus();
    }
    SortBuffers buffers;
    buffers.count = n;
    buffers.keys = std::as_writable_bytes(std::span(keys_.data(), keys_.size()));
    if (spec_.payload == SortPayload::kValues) {
      buffers.values = std::as_bytes(std::span(values_.data(), values_.size()));
      values_out_.resize(values_.size());
      buffers.values_out = std::as_writable_bytes(std::span(values_out_.data(), values_out_.size()));
    } else if (spec_.payload == SortPayload::kIndices) {
      indices_out_.resize(n * sizeof(int64_t));
      buffers.indices_out = std::span(reinterpret_cast<int64_t*>(indices_out_.data()), n);
    }
    RETURN_IF_ERROR(RunSort(core_.backend(), spec_, buffers, call_.cancellation, call_.report));
    std::string().swap(values_);  // the input values are no longer needed
    cursor_.Reset(n, chunk_bytes_, BytesPerElement());
    return absl::OkStatus();
  }

  std::size_t BytesPerElement() const {
    std::size_t per_element = ElementSize(spec_.dtype);
    if (spec_.payload == SortPayload::kValues) per_element += spec_.value_width;
    if (spec_.payload == SortPayload::kIndices) per_element += sizeof(int64_t);
    return per_element;
  }

  bool ChunksNeedWorker() const override { return Streaming(); }

  absl::Status NextChunk(v1::SortStreamResponse* out, bool* more) override {
    std::size_t begin, end;
    *more = cursor_.Take(&begin, &end);
    out->set_offset(begin);
    const std::size_t width = ElementSize(spec_.dtype);
    if (Streaming()) {
      out->mutable_keys()->resize((end - begin) * width);
      int64_t* indices = nullptr;
      if (spec_.payload == SortPayload::kIndices) {
        out->mutable_indices()->resize((end - begin) * sizeof(int64_t));
        indices = reinterpret_cast<int64_t*>(out->mutable_indices()->data());
      }
      auto* keys = reinterpret_cast<std::byte*>(out->mutable_keys()->data());
      return job_ != nullptr ? job_->ingest().Read(begin, end, keys, indices) : ingest_->Read(begin, end, keys, indices);
    }
    AppendSlice(keys_, begin, end, width, out->mutable_keys());
    if (spec_.payload == SortPayload::kValues)
      AppendSlice(values_out_, begin, end, spec_.value_width, out->mutable_values());
    if (spec_.payload == SortPayload::kIndices)
      AppendSlice(indices_out_, begin, end, sizeof(int64_t), out->mutable_indices());
    return absl::OkStatus();
  }

  SortSpec spec_;
  std::size_t chunk_bytes_ = 0;
  std::size_t key_bytes_ = 0;  // received so far
  std::unique_ptr<SortIngest> ingest_;  // when the backend takes keys as they come
  // A part of a parted Sort (proto StreamPart): its job, and its range [part_first_, + part_keys_).
  std::mutex job_mutex_;  // job_ as OnFailure reads it (from any thread); set once, in the first Accept
  std::shared_ptr<PartedSort> job_;
  uint32_t part_index_ = 0;
  std::size_t part_first_ = 0, part_keys_ = 0, part_written_ = 0;
  std::string pending_;                 // keys received, not yet taken by the worker (work_mutex_)
  std::string carry_;                   // the worker's: a piece of a key waiting for the rest
  std::string keys_, values_, values_out_, indices_out_;
  ChunkCursor cursor_;
};

class TopKStreamCall final
    : public StreamCall<v1::TopKStreamRequest, v1::TopKStreamResponse> {
 public:
  TopKStreamCall(ServiceCore& core, grpc::CallbackServerContext* context)
      : StreamCall(core, context, "TopKStream") {
    Begin();
  }

 private:
  absl::Status Accept(v1::TopKStreamRequest& m, bool first) override {
    if (first) {
      if (!m.has_options())
        return absl::InvalidArgumentError("the first TopKStream message must carry options");
      ASSIGN_OR_RETURN(spec_, DecodeTopKOptions(m.options()));
      call_.dtype_label = DTypeName(spec_.dtype);
      call_.requested = spec_.algorithm;
      RETURN_IF_ERROR(core_.CheckTopKAlgorithm(spec_.algorithm));
      chunk_bytes_ = ChunkBytes(m.response_chunk_bytes());
    } else if (m.has_options() || m.response_chunk_bytes() != 0) {
      return absl::InvalidArgumentError(
          "options may only be sent in the first TopKStream message; they came again");
    }
    RETURN_IF_ERROR(Reserve(m.keys().size()));
    keys_.append(m.keys());
    return absl::OkStatus();
  }

  absl::Status EndOfInput() override {
    ASSIGN_OR_RETURN(call_.keys, CheckTopKShape(spec_, keys_.size()));
    return core_.CheckTopKLimits(spec_, call_.keys);
  }

  absl::Status Execute() override {
    const std::size_t results = spec_.results();
    TopKBuffers buffers;
    buffers.count = call_.keys;
    buffers.keys = std::as_bytes(std::span(keys_.data(), keys_.size()));
    if (spec_.wants_values()) {
      values_out_.resize(results * ElementSize(spec_.dtype));
      buffers.values_out = std::as_writable_bytes(std::span(values_out_.data(), values_out_.size()));
    }
    if (spec_.wants_indices()) {
      indices_out_.resize(results * sizeof(int64_t));
      buffers.indices_out = std::span(reinterpret_cast<int64_t*>(indices_out_.data()), results);
    }
    RETURN_IF_ERROR(RunTopK(core_.backend(), spec_, buffers, call_.cancellation, call_.report));
    std::string().swap(keys_);
    std::size_t per_result = 0;
    if (spec_.wants_values()) per_result += ElementSize(spec_.dtype);
    if (spec_.wants_indices()) per_result += sizeof(int64_t);
    cursor_.Reset(results, chunk_bytes_, per_result);
    return absl::OkStatus();
  }

  absl::Status NextChunk(v1::TopKStreamResponse* out, bool* more) override {
    std::size_t begin, end;
    *more = cursor_.Take(&begin, &end);
    out->set_offset(begin);
    if (spec_.wants_values())
      AppendSlice(values_out_, begin, end, ElementSize(spec_.dtype), out->mutable_values());
    if (spec_.wants_indices())
      AppendSlice(indices_out_, begin, end, sizeof(int64_t), out->mutable_indices());
    return absl::OkStatus();
  }

  TopKSpec spec_;
  std::size_t chunk_bytes_ = 0;
  std::string keys_, values_out_, indices_out_;
  ChunkCursor cursor_;
};

}  // namespace

grpc::ServerBidiReactor<v1::SortStreamRequest, v1::SortStreamResponse>* StartSortStreamCall(
    ServiceCore& core, grpc::CallbackServerContext* context) {
  return new SortStreamCall(core, context);
}

grpc::ServerBidiReactor<v1::TopKStreamRequest, v1::TopKStreamResponse>* StartTopKStreamCall(
    ServiceCore& core, grpc::CallbackServerContext* context) {
  return new TopKStreamCall(core, context);
}

}  // namespace gpusort
