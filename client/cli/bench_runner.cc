#include "client/cli/bench_runner.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <span>
#include <thread>
#include <type_traits>

#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include "client/cli/array_file.h"
#include "client/cli/bench_device_memory.h"
#include "client/cli/dtype_names.h"
#include "client/cli/generate.h"
#include "client/cli/key_order.h"
#include "client/cli/rate_ramp.h"
#include "client/cli/server_address.h"
#include "gpusort/client.h"
#include "gpusort/grpc_interop.h"  // EchoService: a channel and call metadata as the Client's
#include "gpusort/v1/echo.grpc.pb.h"

namespace gpusort::cli {
namespace {

using Clock = std::chrono::steady_clock;

// gRPC puts channels whose target and arguments are equal on one shared connection (its global
// subchannel pool): a distinct argument per channel makes --connections N open N TCP connections.
constexpr char kConnectionArgument[] = "gpusort.bench.connection";
std::atomic<int> next_connection{0};

// A shared-memory region of one connection holding one payload's keys, with room for the answer.
struct ShmSlot {
  std::unique_ptr<SharedMemoryRegion> region;
  const char* payload = nullptr;  // whose keys are at the region's start
};

// --transport device: the same in device memory of this node, registered as a device region.
struct DeviceSlot {
  std::unique_ptr<BenchDeviceMemory> memory;
  std::unique_ptr<SharedMemoryRegistration> registration;
  const char* payload = nullptr;
};

// One connection to the server, with what the chosen method calls on it.
struct Connection {
  std::unique_ptr<Client> client;                // sort, topk
  std::unique_ptr<v1::EchoService::Stub> echo;   // echo
  // echo over --transport stream of --stream-parts parts: a stub per part, each on its own connection,
  // as the client library sends a sort in parts (the gRPC side of tcp_floor's many connections)
  std::vector<std::unique_ptr<v1::EchoService::Stub>> echo_parts;
  ClientOptions echo_options;                    // echo: the metadata its calls carry
  std::mutex shm_mutex;                          // --transport shm: regions not in use by a call
  std::vector<ShmSlot> shm_free;                 // (destroyed before the client that registered them)
  std::vector<DeviceSlot> device_free;           // --transport device, under shm_mutex too
};

// The server(s), load balancing, TLS and token of the run, as every connection dials them.
absl::StatusOr<ClientOptions> ConnectionOptions(const BenchConfig& config) {
  ClientOptions options;
  absl::StatusOr<std::vector<std::string>> targets = ServerTargets(config.server);
  if (!targets.ok()) return targets.status();
  std::vector<std::string> servers = *std::move(targets);
  if (servers.size() == 1) {
    options.target = servers.front();
  } else {
    options.targets = std::move(servers);
  }
  options.load_balancing = config.load_balancing;
  options.tls = config.tls;
  options.bearer_token = config.bearer_token;
  options.shm_socket = config.shm_socket;
  options.wait_spin = std::chrono::microseconds(config.wait_spin_us);
  options.shm_calls_on_socket = config.shm_calls_on_socket;
  return options;
}

absl::StatusOr<std::vector<Connection>> OpenConnections(const BenchConfig& config) {
  std::vector<Connection> connections(config.connections);
  for (Connection& c : connections) {
    const int id = next_connection.fetch_add(1);
    absl::StatusOr<ClientOptions> made = ConnectionOptions(config);
    if (!made.ok()) return made.status();
    ClientOptions options = *std::move(made);
    if (config.method == BenchMethod::kEcho) {
      options.max_message_bytes = std::size_t{1} << 30;  // the server's --max-message-bytes is the limit
      options.channel_arguments = {{kConnectionArgument, id}};
      auto channel = CreateChannel(options);
      if (!channel.ok()) return channel.status();
      c.echo = v1::EchoService::NewStub(*channel);
      for (int part = 0; config.transport == BenchTransport::kStream && config.echo_stream_parts > 1 &&
                         part < config.echo_stream_parts;
           ++part) {
        ClientOptions part_options = options;
        part_options.channel_arguments = {{kConnectionArgument, next_connection.fetch_add(1)}};
        auto part_channel = CreateChannel(part_options);
        if (!part_channel.ok()) return part_channel.status();
        c.echo_parts.push_back(v1::EchoService::NewStub(*part_channel));
      }
      c.echo_options = std::move(options);
      continue;
    }
    options.timeout = std::chrono::milliseconds(std::llround(config.timeout_seconds * 1000));
    options.transport = config.transport == BenchTransport::kStream    ? Transport::kStream
                        : config.transport == BenchTransport::kSockets ? Transport::kSockets
                        : config.transport == BenchTransport::kAuto    ? Transport::kAuto
                                                                        : Transport::kUnary;
    options.stream_chunk_bytes = config.chunk_bytes;
    options.stream_parts = config.stream_parts;
    options.stream_parts_from_bytes = config.stream_parts_from_bytes;
    options.max_message_bytes = std::size_t{1} << 30;  // the server's --max-message-bytes is the limit
    options.channel_arguments = {{kConnectionArgument, id}};
    c.client = std::make_unique<Client>(options);
    if (!c.client->status().ok()) return c.client->status();
  }
  return connections;
}

// keys: sorted keys, top-k values or the echoed bytes; indices: int64, with --argsort.
struct Answer {
  std::string keys, indices;
  StageTimes stages_ms;  // the server's stages (ExecutionInfo); none for echo
};

// The server's stages, then its whole time as "server" (ExecutionInfo.server_seconds: arrival to reply),
// so that a row tells the time between the stages and the server's edge, and the transport's (the call's
// latency minus "server").
StageTimes StagesOf(const ExecutionInfo& info) {
  StageTimes stages;
  for (const auto& s : info.stages) stages.emplace_back(s.stage, s.seconds * 1e3);
  if (info.server_seconds > 0) stages.emplace_back("server", info.server_seconds * 1e3);
  return stages;
}
using RequestFn = absl::StatusOr<Answer> (*)(const BenchConfig&, Connection&, std::string_view keys);

// Answer memory that each bench thread reuses from call to call, as tcp_floor reuses its buffers. Fresh
// memory for every answer measures the host's page faults, not the path: on the GPU machine (16 cores),
// gathering 64 MiB of echoed parts into fresh memory took 63-76 ms, against gRPC's 27-31 ms to move
// them (docs/benchmarks-log.md, issue 18). --fresh-answers gives each call fresh memory, as SortRaw's callers get.
thread_local Answer recycled_answer;

// An Answer whose keys hold `key_bytes` and indices `index_bytes` bytes (contents undefined): the
// thread's recycled one unless --fresh-answers.
Answer TakeAnswer(const BenchConfig& config, std::size_t key_bytes, std::size_t index_bytes) {
  Answer answer;
  if (!config.fresh_answers) answer = std::move(recycled_answer);
  answer.keys.resize(key_bytes);  // no writes where the size is already right
  answer.indices.resize(index_bytes);
  answer.stages_ms.clear();
  return answer;
}

void RecycleAnswer(Answer answer) { recycled_answer = std::move(answer); }

// Sort and top-k go through gpusort::Client, which picks the RPC by its Transport option.
absl::StatusOr<Answer> RunSort(const BenchConfig& config, Connection& c, std::string_view keys) {
  RawSortRequest request;
  request.dtype = config.dtype;
  request.keys = keys;
  request.options.descending = config.descending;
  request.options.algorithm = config.algorithm;
  request.options.rows = config.rows;
  if (config.argsort) request.payload = Payload::kIndices;
  if (config.fresh_answers) {
    auto result = c.client->SortRaw(request);
    if (!result.ok()) return result.status();
    return Answer{std::move(result->keys), std::move(result->indices), StagesOf(result->info)};
  }
  Answer answer = TakeAnswer(config, keys.size(),
                             config.argsort ? keys.size() / ElementSize(config.dtype) * sizeof(int64_t) : 0);
  auto info = c.client->SortRawInto(request, std::as_writable_bytes(std::span(answer.keys)),
                                    std::as_writable_bytes(std::span(answer.indices)));
  if (!info.ok()) return info.status();
  answer.stages_ms = StagesOf(*info);
  return answer;
}

absl::StatusOr<Answer> RunTopK(const BenchConfig& config, Connection& c, std::string_view keys) {
  TopKOptions options;
  options.k = config.k;
  options.largest = true;
  options.sorted = true;
  options.output = config.argsort ? TopKOutput::kValuesAndIndices : TopKOutput::kValues;
  options.algorithm = config.algorithm;
  options.rows = config.rows;
  auto result = c.client->TopKRaw(config.dtype, keys, options);
  if (!result.ok()) return result.status();
  return Answer{std::move(result->values), std::move(result->indices), StagesOf(result->info)};
}

std::unique_ptr<grpc::ClientContext> EchoContext(const BenchConfig& config, const Connection& c) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (config.timeout_seconds > 0)
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::milliseconds(std::llround(config.timeout_seconds * 1000)));
  AddCallMetadata(c.echo_options, *context);  // the bearer token
  return context;
}

absl::Status ToAbsl(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

absl::StatusOr<Answer> RunEchoUnary(const BenchConfig& config, Connection& c, std::string_view keys) {
  v1::EchoMessage request, response;
  request.set_data(std::string(keys));  // a copy, as Client::SortRaw makes one
  auto context = EchoContext(config, c);
  const grpc::Status status = c.echo->Echo(context.get(), request, &response);
  if (!status.ok()) return ToAbsl(status);
  return Answer{std::move(*response.mutable_data()), {}};
}

// Runs one task at a time on a long-lived thread of its own. Starting a thread for every streamed
// echo would add about 50 us to each call (measured on the 2-core build machine); handing the task
// to a waiting thread costs a few.
class TaskThread {
 public:
  TaskThread() : thread_([this] { Loop(); }) {}
  ~TaskThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Start(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    task_ = std::move(task);
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !task_; });
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return task_ || stop_; });
      if (!task_) return;
      lock.unlock();
      task_();  // Start is not called again before Wait has seen this task done
      lock.lock();
      task_ = nullptr;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> task_;
  bool stop_ = false;
  std::thread thread_;  // last: it starts after the members it uses
};

// One EchoStream of `keys` on `stub` into `echoed` (as many bytes), with `writer` sending while this
// thread reads. The server echoes each chunk as it arrives, so reading must overlap writing: on one
// thread, the unread echoes would fill the flow-control window and stall the server, then the writes.
// Each thread that makes calls keeps its own writer.
absl::Status EchoOneStream(const BenchConfig& config, const Connection& c, v1::EchoService::Stub& stub,
                           TaskThread& writer, std::string_view keys, std::span<char> echoed) {
  auto context = EchoContext(config, c);
  auto stream = stub.EchoStream(context.get());
  writer.Start([&] {
    v1::EchoMessage out;
    for (std::size_t pos = 0; pos < keys.size(); pos += config.chunk_bytes) {
      out.set_data(std::string(keys.substr(pos, config.chunk_bytes)));
      if (!stream->Write(out)) break;
    }
    stream->WritesDone();
  });
  std::size_t received = 0;
  v1::EchoMessage in;
  bool fits = true;
  while (stream->Read(&in)) {
    fits = fits && in.data().size() <= echoed.size() - received;
    if (!fits) continue;  // read on to the end, then fail
    std::memcpy(echoed.data() + received, in.data().data(), in.data().size());
    received += in.data().size();
  }
  writer.Wait();
  const grpc::Status status = stream->Finish();
  if (!status.ok()) return ToAbsl(status);
  if (!fits || received != echoed.size()) return absl::DataLossError("the echo's length differs from the request's");
  return absl::OkStatus();
}

// The same bytes in --stream-parts equal parts at once, each an EchoStream on its own connection (from
// --stream-parts-from, as a sort's parts): each part on a thread of its own, which
// keeps its writer.
absl::StatusOr<Answer> RunEchoInParts(const BenchConfig& config, Connection& c, std::string_view keys) {
  const std::size_t parts = c.echo_parts.size();
  Answer answer = TakeAnswer(config, keys.size(), 0);
  std::vector<absl::Status> echoed(parts);
  thread_local std::vector<std::unique_ptr<TaskThread>> readers, writers;
  while (readers.size() < parts) {
    readers.push_back(std::make_unique<TaskThread>());
    writers.push_back(std::make_unique<TaskThread>());
  }
  for (std::size_t p = 0; p < parts; ++p) {
    const std::size_t begin = keys.size() * p / parts, end = keys.size() * (p + 1) / parts;
    // The writer by address: a lambda names a thread_local, it does not capture it, and the reader's
    // own thread has none.
    TaskThread* const writer = writers[p].get();
    readers[p]->Start([&, p, begin, end, writer] {
      echoed[p] = EchoOneStream(config, c, *c.echo_parts[p], *writer, keys.substr(begin, end - begin),
                                std::span(answer.keys).subspan(begin, end - begin));
    });
  }
  for (std::size_t p = 0; p < parts; ++p) readers[p]->Wait();
  for (const absl::Status& status : echoed)
    if (!status.ok()) return status;
  return answer;
}

// Echo over --transport stream: one stream, or parts (RunEchoInParts) where a sort's keys would go in parts.
absl::StatusOr<Answer> RunEchoStream(const BenchConfig& config, Connection& c, std::string_view keys) {
  if (!c.echo_parts.empty() && keys.size() >= config.stream_parts_from_bytes) {
    return RunEchoInParts(config, c, keys);
  }
  thread_local TaskThread writer;
  Answer answer = TakeAnswer(config, keys.size(), 0);
  if (absl::Status s = EchoOneStream(config, c, *c.echo, writer, keys, std::span(answer.keys)); !s.ok()) return s;
  return answer;
}

// Where one call's keys and answers lie in a region: keys at 0, the answer and the indices after them,
// each 64-byte aligned.
struct RegionLayout {
  std::size_t key_bytes, out_offset, value_bytes, index_offset, index_bytes;
  std::size_t bytes() const { return index_offset + std::max<std::size_t>(index_bytes, 1); }
};

RegionLayout LayoutFor(const BenchConfig& config, std::size_t key_bytes) {
  RegionLayout l;
  l.key_bytes = key_bytes;
  l.out_offset = (key_bytes + 63) / 64 * 64;
  const std::size_t results =
      config.method == BenchMethod::kTopK ? config.rows * config.k : key_bytes / ElementSize(config.dtype);
  l.value_bytes = results * ElementSize(config.dtype);
  l.index_offset = l.out_offset + (l.value_bytes + 63) / 64 * 64;
  l.index_bytes = config.argsort ? results * sizeof(int64_t) : 0;
  return l;
}

// One Sort or TopK naming ranges of a registered region laid out as `l`.
absl::StatusOr<ExecutionInfo> CallOnRegion(const BenchConfig& config, Client& client, const RegionLayout& l,
                                               const std::function<RegionRef(std::size_t, std::size_t)>& ref) {
  const RegionRef in = ref(0, l.key_bytes);
  const RegionRef out = ref(l.out_offset, l.value_bytes);
  const RegionRef indices = ref(l.index_offset, l.index_bytes);
  if (config.method == BenchMethod::kTopK) {
    TopKOptions options;
    options.k = config.k;
    options.output = config.argsort ? TopKOutput::kValuesAndIndices : TopKOutput::kValues;
    options.algorithm = config.algorithm;
    options.rows = config.rows;
    return client.TopKInRegion(config.dtype, options, in, &out, config.argsort ? &indices : nullptr);
  }
  SortOptions options;
  options.descending = config.descending;
  options.algorithm = config.algorithm;
  options.rows = config.rows;
  return client.SortInRegion(config.dtype, options, config.argsort ? Payload::kIndices : Payload::kNone, in, out,
                             config.argsort ? &indices : nullptr);
}

// A free slot of `payload` from `free` (a default one when none is), and its way back: each call in
// flight holds a slot of its own, reused by later calls with the same payload.
template <typename Slot>
Slot TakeSlot(std::mutex& mutex, std::vector<Slot>& free, const char* payload) {
  std::lock_guard lock(mutex);
  for (auto it = free.begin(); it != free.end(); ++it) {
    if (it->payload == payload) {
      Slot slot = std::move(*it);
      free.erase(it);
      return slot;
    }
  }
  return Slot();
}

template <typename Slot>
void ReturnSlot(std::mutex& mutex, std::vector<Slot>& free, Slot slot) {
  std::lock_guard lock(mutex);
  free.push_back(std::move(slot));
}

// --transport shm: the keys already lie in a registered region (each region is filled with its payload
// once, outside the timing of later calls), so a call moves no array over the socket, as a caller that
// builds its arrays in shared memory would see. Each call in flight has a region of its own, for its
// answer. The answer is copied out only for --check.
absl::StatusOr<Answer> RunShmRequest(const BenchConfig& config, Connection& c, std::string_view keys) {
  const RegionLayout l = LayoutFor(config, keys.size());
  ShmSlot slot = TakeSlot(c.shm_mutex, c.shm_free, keys.data());
  if (slot.region == nullptr) {
    auto region = c.client->CreateSharedMemory(l.bytes());
    if (!region.ok()) return region.status();
    slot.region = std::move(*region);
    slot.payload = keys.data();
    std::memcpy(slot.region->data(), keys.data(), keys.size());
  }
  const absl::StatusOr<ExecutionInfo> info =
      CallOnRegion(config, *c.client, l, [&](std::size_t offset, std::size_t length) {
        return slot.region->Ref(offset, length);
      });
  Answer answer;
  if (info.ok() && config.check) {
    const char* base = reinterpret_cast<const char*>(slot.region->data());
    answer.keys.assign(base + l.out_offset, l.value_bytes);
    answer.indices.assign(base + l.index_offset, l.index_bytes);
  }
  ReturnSlot(c.shm_mutex, c.shm_free, std::move(slot));
  if (!info.ok()) return info.status();
  answer.stages_ms = StagesOf(*info);
  return answer;
}

// A device slot for `keys`: exportable device memory holding them, registered as a device region.
absl::StatusOr<DeviceSlot> NewDeviceSlot(const BenchConfig& config, const RegionLayout& l, std::string_view keys) {
  DeviceSlot slot;
  auto memory = BenchDeviceMemory::Allocate(l.bytes());
  if (!memory.ok()) return memory.status();
  slot.memory = *std::move(memory);
  if (absl::Status s = slot.memory->Write(0, keys.data(), keys.size()); !s.ok()) return s;
  absl::StatusOr<int> fd = slot.memory->ExportFd();
  if (!fd.ok()) return fd.status();
  auto registration = SharedMemoryRegistration::RegisterDeviceMemory(config.shm_socket, *fd, l.bytes());
  close(*fd);
  if (!registration.ok()) return registration.status();
  slot.registration = *std::move(registration);
  slot.payload = keys.data();
  return slot;
}

// --transport device: as --transport shm, with the keys in device memory of this node (filled once per
// slot, outside the timing of later calls); the answers are read back from the device only for --check.
absl::StatusOr<Answer> RunDeviceRequest(const BenchConfig& config, Connection& c, std::string_view keys) {
  const RegionLayout l = LayoutFor(config, keys.size());
  DeviceSlot slot = TakeSlot(c.shm_mutex, c.device_free, keys.data());
  if (slot.memory == nullptr) {
    absl::StatusOr<DeviceSlot> fresh = NewDeviceSlot(config, l, keys);
    if (!fresh.ok()) return fresh.status();
    slot = *std::move(fresh);
  }
  const absl::StatusOr<ExecutionInfo> info =
      CallOnRegion(config, *c.client, l, [&](std::size_t offset, std::size_t length) {
        return slot.registration->Ref(offset, length);
      });
  Answer answer;
  absl::Status read = absl::OkStatus();
  if (info.ok() && config.check) {
    answer.keys.resize(l.value_bytes);
    answer.indices.resize(l.index_bytes);
    read = slot.memory->Read(l.out_offset, answer.keys.data(), l.value_bytes);
    if (read.ok()) read = slot.memory->Read(l.index_offset, answer.indices.data(), l.index_bytes);
  }
  ReturnSlot(c.shm_mutex, c.device_free, std::move(slot));
  if (!info.ok()) return info.status();
  if (!read.ok()) return read;
  answer.stages_ms = StagesOf(*info);
  return answer;
}

// --transport shm and device: `count` more slots of `keys` on connection `c`, made and filled now (their
// regions registered) and left free for the calls to take.
absl::Status AddSlots(const BenchConfig& config, Connection& c, std::string_view keys, int count) {
  const RegionLayout l = LayoutFor(config, keys.size());
  for (int i = 0; i < count; ++i) {
    if (config.transport == BenchTransport::kShm) {
      auto region = c.client->CreateSharedMemory(l.bytes());
      if (!region.ok()) return region.status();
      ShmSlot slot;
      slot.region = std::move(*region);
      slot.payload = keys.data();
      std::memcpy(slot.region->data(), keys.data(), keys.size());
      ReturnSlot(c.shm_mutex, c.shm_free, std::move(slot));
    } else if (config.transport == BenchTransport::kDevice) {
      absl::StatusOr<DeviceSlot> slot = NewDeviceSlot(config, l, keys);
      if (!slot.ok()) return slot.status();
      ReturnSlot(c.shm_mutex, c.device_free, *std::move(slot));
    }
  }
  return absl::OkStatus();
}

RequestFn ChooseRequest(const BenchConfig& config) {
  if (config.transport == BenchTransport::kShm) return RunShmRequest;
  if (config.transport == BenchTransport::kDevice) return RunDeviceRequest;
  switch (config.method) {
    case BenchMethod::kSort: return RunSort;
    case BenchMethod::kTopK: return RunTopK;
    case BenchMethod::kEcho: break;
  }
  // echo over auto: streamed from the size the client library streams Sorts and TopKs from.
  const bool stream = config.transport == BenchTransport::kStream ||
                      (config.transport == BenchTransport::kAuto &&
                       config.count * ElementSize(config.dtype) >= ClientOptions{}.stream_from_bytes);
  return stream ? RunEchoStream : RunEchoUnary;
}

// Judges answers against references computed once, before any load.
class Checker {
 public:
  virtual ~Checker() = default;
  // "" when `answer` is right for payload `index` (whose bytes are `keys`), else what is wrong.
  virtual std::string Problem(std::size_t index, std::string_view keys, const Answer& answer) const = 0;
};

class EchoChecker final : public Checker {
 public:
  std::string Problem(std::size_t, std::string_view keys, const Answer& answer) const override {
    return answer.keys == keys ? "" : "the echoed bytes differ from the request";
  }
};

template <typename T>
T Load(std::string_view bytes, std::size_t i) {
  T x;
  std::memcpy(&x, bytes.data() + i * sizeof(T), sizeof(T));
  return x;
}

// Sort (ascending, descending, argsort) and top-k (the k largest, in rank order, with indices on
// --argsort), row by row with --rows (indices count from the row's start). Equal keys have equal bits,
// so any tie order passes.
template <typename T>
class OrderChecker final : public Checker {
  using U = decltype(OrderedBits(T{}));

 public:
  OrderChecker(const BenchConfig& config, const std::vector<std::string>& payloads)
      : topk_(config.method == BenchMethod::kTopK),
        reversed_(topk_ || config.descending),
        argsort_(config.argsort),
        k_(config.k),
        rows_(config.rows) {
    for (const std::string& p : payloads) {
      std::vector<U> bits(p.size() / sizeof(T));
      for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = OrderedBits(Load<T>(p, i));
      const std::size_t m = bits.size() / rows_;
      for (std::size_t r = 0; r < rows_; ++r) std::sort(bits.begin() + r * m, bits.begin() + (r + 1) * m);
      sorted_.push_back(std::move(bits));
    }
  }

  std::string Problem(std::size_t index, std::string_view keys, const Answer& answer) const override {
    const std::vector<U>& sorted = sorted_[index];
    const std::size_t m = sorted.size() / rows_, per_row = topk_ ? k_ : m, want = rows_ * per_row;
    // The i-th answer of row r, and where it is said.
    auto expected = [&](std::size_t r, std::size_t i) { return sorted[r * m + (reversed_ ? m - 1 - i : i)]; };
    auto where = [&](std::size_t r, std::size_t i) {
      return rows_ == 1 ? std::to_string(i) : std::to_string(i) + " of row " + std::to_string(r);
    };
    if (answer.keys.size() != want * sizeof(T))
      return std::to_string(answer.keys.size()) + " key bytes back, expected " +
             std::to_string(want * sizeof(T));
    for (std::size_t r = 0; r < rows_; ++r)
      for (std::size_t i = 0; i < per_row; ++i)
        if (OrderedBits(Load<T>(answer.keys, r * per_row + i)) != expected(r, i))
          return "key " + where(r, i) + " is not the reference's";
    if (!argsort_) return "";
    if (answer.indices.size() != want * sizeof(int64_t))
      return std::to_string(answer.indices.size()) + " index bytes back, expected " +
             std::to_string(want * sizeof(int64_t));
    for (std::size_t r = 0; r < rows_; ++r) {
      std::vector<bool> seen(m);
      for (std::size_t i = 0; i < per_row; ++i) {
        const int64_t at = Load<int64_t>(answer.indices, r * per_row + i);
        if (at < 0 || static_cast<std::size_t>(at) >= m || seen[at])
          return "index " + where(r, i) + " is out of range or repeated";
        seen[at] = true;
        if (OrderedBits(Load<T>(keys, r * m + at)) != expected(r, i))
          return "keys[indices[" + where(r, i) + "]] is not the reference's key";
      }
    }
    return "";
  }

 private:
  const bool topk_, reversed_, argsort_;
  const uint64_t k_, rows_;
  std::vector<std::vector<U>> sorted_;  // each payload's keys as ordered bits, each row ascending
};

struct Workload {
  std::vector<std::string> payloads;
  std::unique_ptr<Checker> checker;  // with --check
};

absl::StatusOr<Workload> MakeWorkload(const BenchConfig& config) {
  Workload w;
  if (!config.keys_from.empty()) {
    w.payloads.push_back(config.keys_data);  // read once by ApplyKeysFrom
  }
  for (int p = 0; config.keys_from.empty() && p < config.payloads; ++p) {
    auto bytes = Generate(config.dtype, config.count, config.distribution, config.seed + p);
    if (!bytes.ok()) return bytes.status();
    w.payloads.push_back(std::move(*bytes));
  }
  if (!config.check) return w;
  if (config.method == BenchMethod::kEcho) {
    w.checker = std::make_unique<EchoChecker>();
  } else {
    w.checker = VisitDType(config.dtype, [&](auto tag) -> std::unique_ptr<Checker> {
      return std::make_unique<OrderChecker<decltype(tag)>>(config, w.payloads);
    });
  }
  return w;
}

// Counts readable while the load runs, for the progress line.
struct LiveCounters {
  std::atomic<uint64_t> ok{0}, errors{0};
};

// Calls `progress` every 0.5 s from its own thread, and a last time (final) when destroyed.
class ProgressTicker {
 public:
  ProgressTicker(const ProgressFn& progress, std::string label, const LiveCounters& live)
      : progress_(progress), label_(std::move(label)), live_(live), start_(Clock::now()) {
    if (progress_) thread_ = std::thread([this] { Tick(); });
  }
  ~ProgressTicker() {
    if (!progress_) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
    Report(true);
  }

 private:
  void Tick() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; })) Report(false);
  }
  void Report(bool final) const {
    progress_({.label = label_,
               .elapsed_s = std::chrono::duration<double>(Clock::now() - start_).count(),
               .completed = live_.ok.load(),
               .errors = live_.errors.load(),
               .final = final});
  }

  const ProgressFn& progress_;
  const std::string label_;
  const LiveCounters& live_;
  const Clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// The open loop's threads, started as the load needs them: a synchronous call holds its thread, so
// there are as many threads as requests were ever in flight at once (at most --max-inflight). Each job
// is counted in its bucket (a linear ramp's interval; else bucket 0), each thread keeping a recorder
// per bucket, so that recording still takes no lock.
class GrowingPool {
 public:
  struct Job {
    uint64_t ticket;
    Clock::time_point due;
    std::size_t bucket = 0;
  };
  using RunFn = std::function<void(const Job&, Recorder&)>;

  explicit GrowingPool(RunFn run) : run_(std::move(run)) {}

  void Submit(const Job& job) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(job);
    if (static_cast<std::size_t>(idle_) >= queue_.size()) {
      cv_.notify_one();
      return;
    }
    recorders_.emplace_back();
    threads_.emplace_back(&GrowingPool::Work, this, &recorders_.back());
  }

  // Waits for every job submitted; their counts, merged per bucket (jobs' buckets are below `buckets`).
  std::vector<Recorder> Join(std::size_t buckets) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    std::vector<Recorder> all(buckets);
    for (std::vector<Recorder>& thread_recorders : recorders_)
      for (std::size_t b = 0; b < thread_recorders.size(); ++b) all[b].Merge(std::move(thread_recorders[b]));
    return all;
  }

 private:
  void Work(std::vector<Recorder>* recorders) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [this] { return !queue_.empty() || closing_; });
      --idle_;
      if (queue_.empty()) return;
      const Job job = queue_.front();
      queue_.pop_front();
      lock.unlock();
      if (recorders->size() <= job.bucket) recorders->resize(job.bucket + 1);
      run_(job, (*recorders)[job.bucket]);
      lock.lock();
    }
  }

  const RunFn run_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  int idle_ = 0;
  bool closing_ = false;
  std::deque<std::vector<Recorder>> recorders_;  // one set per thread; a deque, so that addresses stay put
  std::vector<std::thread> threads_;
};

struct Limits {
  double seconds;     // stop starting requests after this long, unless `requests` > 0
  uint64_t requests;  // > 0: exactly this many requests
};

struct Phase {
  Recorder recorder;
  double seconds = 0;
};

// When the open loop's requests are due, and which bucket of the report each one counts in.
struct Arrivals {
  std::function<double(uint64_t)> due_s;  // request i's start, in seconds from the loop's start
  double bucket_s = 0;                    // > 0: a bucket per this many seconds of due times; else one
  std::size_t buckets = 1;
  std::size_t BucketOf(double due_s) const {
    if (!(bucket_s > 0)) return 0;
    return std::min(buckets - 1, static_cast<std::size_t>(due_s / bucket_s));
  }
};

// Requests at a fixed rate: request i is due at i / rate.
Arrivals ConstantRate(double rate) {
  const double interval = 1.0 / rate;
  return {.due_s = [interval](uint64_t i) { return static_cast<double>(i) * interval; }};
}

// The open loop's counts, per bucket, and how long it ran (the last answer included).
struct OpenPhase {
  std::vector<Recorder> buckets;
  double seconds = 0;
};

class Runner {
 public:
  Runner(const BenchConfig& config, const ProgressFn& progress)
      : config_(config), progress_(progress), request_(ChooseRequest(config)) {}

  absl::Status Start() {
    auto workload = MakeWorkload(config_);
    if (!workload.ok()) return workload.status();
    workload_ = std::move(*workload);
    auto connections = OpenConnections(config_);
    if (!connections.ok()) return connections.status();
    connections_ = std::move(*connections);
    // A request that fails like this would fail every time: stop instead of measuring refusals.
    auto first = request_(config_, connections_[0], workload_.payloads[0]);
    const absl::StatusCode code = first.status().code();
    if (code == absl::StatusCode::kUnimplemented || code == absl::StatusCode::kInvalidArgument ||
        code == absl::StatusCode::kUnauthenticated || code == absl::StatusCode::kPermissionDenied ||
        code == absl::StatusCode::kFailedPrecondition)
      return absl::Status(code, "the first request failed: " + std::string(first.status().message()));
    return WarmPayloads();
  }

  // Before anything is measured: every (connection, payload) pair that requests will use gets its
  // regions now (--transport shm and device: as many as calls of that pair can be in flight at the
  // highest closed-loop concurrency, one for the open loop), and every payload one request, so that no
  // first use (a region's creation and registration, the server's first call of a size) falls inside
  // a measurement. Issue 18 saw 256M-key payloads registered on first use put p90 at 2.2 s against a
  // p50 of 48 ms. Request t uses connection t % C and payload t % P: the pairs used are those with
  // c = p modulo gcd(C, P).
  absl::Status WarmPayloads() {
    const std::size_t connections = connections_.size(), payloads = workload_.payloads.size();
    const std::size_t step = std::gcd(connections, payloads);
    const std::size_t pairs = connections * payloads / step;
    const int in_flight = config_.concurrency.empty()
                              ? 1
                              : *std::max_element(config_.concurrency.begin(), config_.concurrency.end());
    const bool open_loop = config_.rate > 0 || config_.linear_ramp();
    const int depth = open_loop ? 1 : static_cast<int>((static_cast<std::size_t>(in_flight) + pairs - 1) / pairs);
    for (std::size_t c = 0; c < connections; ++c) {
      for (std::size_t p = 0; p < payloads; ++p) {
        if ((c + payloads * connections - p) % step != 0) continue;  // never paired
        const std::string& keys = workload_.payloads[p];
        // Start's first request already made one slot of payload 0 on connection 0.
        const int have = c == 0 && p == 0 ? 1 : 0;
        if (absl::Status s = AddSlots(config_, connections_[c], keys, depth - have); !s.ok()) {
          return absl::Status(s.code(), "warming the payloads' regions: " + std::string(s.message()));
        }
        if (c >= step || (c == 0 && p == 0)) continue;  // one request a payload; Start's warmed payload 0
        // A failing warm-up call is left to the measurement to count: it fails there the same way.
        (void)request_(config_, connections_[c], keys);
      }
    }
    return absl::OkStatus();
  }

  // Closed loop at `concurrency`, or the open loop when it is 0: a warm-up, then the measurement.
  BenchRow Measure(int concurrency) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%g/s", config_.rate);
    const std::string label = concurrency > 0 ? "c=" + std::to_string(concurrency) : rate;
    if (config_.warmup_seconds > 0) Run(concurrency, {config_.warmup_seconds, 0}, "warmup " + label);
    Phase phase = Run(concurrency, {config_.duration_seconds, config_.requests}, label);
    return Row(concurrency, phase);
  }

  // --ramp-linear: a warm-up at the ramp's first rate, then the ramp over --duration, its requests
  // counted in the --ramp-interval they were due in: a row per interval, so that latency shows as the
  // load rises.
  std::vector<BenchRow> MeasureLinearRamp() {
    const LinearRamp ramp{
        .from = config_.linear_ramp_from, .to = config_.linear_ramp_to, .seconds = config_.duration_seconds};
    const std::string label = Format("ramp %g", ramp.from) + Format("-%g/s", ramp.to);
    if (config_.warmup_seconds > 0) {
      RunOpen({config_.warmup_seconds, 0}, ConstantRate(ramp.from), "warmup " + label);
    }
    const double interval = config_.ramp_interval_seconds;
    // A last interval shorter than the others when --duration is not a multiple of it (and none for
    // the last bits of a division that should have come out even).
    const auto buckets = static_cast<std::size_t>(std::max(1.0, std::ceil(ramp.seconds / interval - 1e-9)));
    OpenPhase phase = RunOpen({ramp.seconds, 0},
                              {.due_s = [&ramp](uint64_t i) { return ramp.DueAt(i); },
                               .bucket_s = interval,
                               .buckets = buckets},
                              label);
    std::vector<BenchRow> rows;
    for (std::size_t b = 0; b < buckets; ++b) {
      const double begin = static_cast<double>(b) * interval;
      const double end = std::min(ramp.seconds, begin + interval);
      BenchRow row = Row(0, {std::move(phase.buckets[b]), end - begin});
      row.rate = (ramp.ArrivalsBy(end) - ramp.ArrivalsBy(begin)) / (end - begin);
      row.linear_ramp = true;
      row.ramp_at_s = begin;
      rows.push_back(std::move(row));
    }
    return rows;
  }

 private:
  static std::string Format(const char* format, double value) {
    char text[32];
    std::snprintf(text, sizeof text, format, value);
    return text;
  }

  void ResetLiveCounters() {
    live_.ok = 0;
    live_.errors = 0;
  }

  Phase Run(int concurrency, Limits limits, const std::string& label) {
    if (concurrency > 0) {
      ResetLiveCounters();
      ProgressTicker ticker(progress_, label, live_);
      return ClosedLoop(concurrency, limits);
    }
    OpenPhase open = RunOpen(limits, ConstantRate(config_.rate), label);
    return {std::move(open.buckets.front()), open.seconds};
  }

  OpenPhase RunOpen(Limits limits, const Arrivals& arrivals, const std::string& label) {
    ResetLiveCounters();
    ProgressTicker ticker(progress_, label, live_);
    return OpenLoop(limits, arrivals);
  }

  // One request: request number `ticket` takes payload ticket % P over connection ticket % C.
  void Issue(uint64_t ticket, Clock::time_point start, Recorder& recorder) {
    const std::size_t p = ticket % workload_.payloads.size();
    const std::string& keys = workload_.payloads[p];
    auto answer = request_(config_, connections_[ticket % connections_.size()], keys);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (!answer.ok()) {
      recorder.Error(absl::StatusCodeToString(answer.status().code()),
                     std::string(answer.status().message()));
      ++live_.errors;
      return;
    }
    if (workload_.checker) {
      const std::string problem = workload_.checker->Problem(p, keys, *answer);
      if (!problem.empty()) {
        recorder.Error(kWrongAnswer, problem);
        ++live_.errors;
        return;
      }
    }
    recorder.Ok(ms, keys.size(), answer->keys.size() + answer->indices.size(), answer->stages_ms);
    ++live_.ok;
    RecycleAnswer(*std::move(answer));
  }

  Phase ClosedLoop(int concurrency, Limits limits) {
    std::atomic<uint64_t> next{0};
    std::vector<Recorder> recorders(concurrency);
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits.seconds));
    std::vector<std::thread> threads;
    for (int t = 0; t < concurrency; ++t)
      threads.emplace_back([&, t] {
        for (;;) {
          if (limits.requests == 0 && Clock::now() >= deadline) return;
          const uint64_t ticket = next.fetch_add(1);
          if (limits.requests > 0 && ticket >= limits.requests) return;
          Issue(ticket, Clock::now(), recorders[t]);
        }
      });
    for (std::thread& t : threads) t.join();
    Phase phase;
    phase.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    for (Recorder& r : recorders) phase.recorder.Merge(std::move(r));
    return phase;
  }

  // Requests start when `arrivals` says, whatever the answers do, until limits.seconds (or
  // limits.requests of them).
  OpenPhase OpenLoop(Limits limits, const Arrivals& arrivals) {
    std::atomic<int> inflight{0};
    GrowingPool pool([&](const GrowingPool::Job& job, Recorder& recorder) {
      Issue(job.ticket, job.due, recorder);
      --inflight;
    });
    std::vector<Recorder> saturated(arrivals.buckets);
    const Clock::time_point start = Clock::now();
    for (uint64_t i = 0; limits.requests == 0 || i < limits.requests; ++i) {
      const std::chrono::duration<double> offset(arrivals.due_s(i));
      if (limits.requests == 0 && offset.count() >= limits.seconds) break;
      const Clock::time_point due = start + std::chrono::duration_cast<Clock::duration>(offset);
      const std::size_t bucket = arrivals.BucketOf(offset.count());
      std::this_thread::sleep_until(due);  // when behind schedule, start at once
      if (inflight.load() >= config_.max_inflight) {
        saturated[bucket].Error(kClientSaturated, "client saturated: --max-inflight requests in flight");
        ++live_.errors;
        continue;
      }
      ++inflight;
      pool.Submit({i, due, bucket});
    }
    OpenPhase phase;
    phase.buckets = pool.Join(arrivals.buckets);
    phase.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    for (std::size_t b = 0; b < arrivals.buckets; ++b) phase.buckets[b].Merge(std::move(saturated[b]));
    return phase;
  }

  BenchRow Row(int concurrency, const Phase& phase) const {
    const Recorder& r = phase.recorder;
    BenchRow row;
    row.method = MethodName(config_.method);
    row.transport = TransportName(config_.transport);
    row.dtype = DTypeName(config_.dtype);
    row.count = config_.count;
    row.concurrency = concurrency;
    row.rate = concurrency > 0 ? 0 : config_.rate;
    row.connections = config_.connections;
    row.duration_s = phase.seconds;
    row.requests = r.ok();
    row.errors = r.errors();
    row.errors_by_code = r.errors_by_code();
    row.error_messages = r.first_messages();
    if (phase.seconds > 0) {
      row.requests_per_s = static_cast<double>(r.ok()) / phase.seconds;
      row.keys_per_s = row.requests_per_s * static_cast<double>(config_.count);
      row.mb_per_s = static_cast<double>(r.request_bytes() + r.response_bytes()) / phase.seconds / 1e6;
    }
    row.latency_ms = Summarize(r.latencies_ms());
    row.latency_histogram = Histogram(r.latencies_ms());
    row.stage_p50_ms = StageMedians(r.stages_ms());
    row.k = config_.method == BenchMethod::kTopK ? config_.k : 0;
    row.rows = config_.rows;
    row.algorithm = AlgorithmFlagName(config_.algorithm);
    row.distribution = config_.keys_from.empty() ? config_.distribution : "file";
    row.seed = config_.keys_from.empty() ? config_.seed : 0;
    row.payloads = config_.keys_from.empty() ? config_.payloads : 1;
    row.descending = config_.descending;
    row.argsort = config_.argsort;
    row.check = config_.check;
    row.keys_from = config_.keys_from;
    return row;
  }

  const BenchConfig& config_;
  const ProgressFn& progress_;
  const RequestFn request_;
  Workload workload_;
  std::vector<Connection> connections_;
  LiveCounters live_;
};

}  // namespace

absl::Status ApplyKeysFrom(BenchConfig& config) {
  if (config.keys_from.empty()) return absl::OkStatus();
  std::optional<DType> dtype;
  if (config.dtype_given) dtype = config.dtype;
  auto format = ChooseReadFormat("", config.keys_from);
  if (!format.ok()) return format.status();
  auto array = ReadArray(config.keys_from, *format, dtype);
  if (!array.ok()) return array.status();
  if (array->count() == 0) return absl::InvalidArgumentError(config.keys_from + " holds no keys");
  config.dtype = array->dtype;
  config.count = array->count();
  // A 2-D .npy is rows, as `gpusort sort` reads it, unless --rows says otherwise.
  if (config.rows == 1 && array->shape.size() == 2) config.rows = array->shape[0];
  config.keys_data = std::move(array->bytes);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<BenchRow>> RunBench(const BenchConfig& given, const ProgressFn& progress) {
  BenchConfig config = given;
  if (!config.rates.empty()) config.rate = config.rates.front();  // open loop from the start
  if (absl::Status read = ApplyKeysFrom(config); !read.ok()) return read;
  if (absl::Status valid = ValidateBenchConfig(config); !valid.ok()) return valid;
  Runner runner(config, progress);
  if (absl::Status started = runner.Start(); !started.ok()) return started;
  if (config.linear_ramp()) return runner.MeasureLinearRamp();
  // One measurement, repeated under --stable until p50 and p99 settle.
  auto measure = [&](int level) {
    BenchRow row = runner.Measure(level);
    if (!(config.stable_percent > 0)) return row;
    row.stable_percent = config.stable_percent;
    for (int repetition = 2; repetition <= config.stable_max; ++repetition) {
      BenchRow next = runner.Measure(level);
      auto moved = [&](double before, double after) {
        return before <= 0 ? after > 0 : std::abs(after - before) / before * 100 >= config.stable_percent;
      };
      const bool settled = !moved(row.latency_ms.p50, next.latency_ms.p50) && !moved(row.latency_ms.p99, next.latency_ms.p99);
      row = std::move(next);
      row.stable_percent = config.stable_percent;
      row.repetitions = repetition;
      row.stable = settled;
      if (settled) break;
    }
    return row;
  };
  std::vector<BenchRow> rows;
  if (!config.rates.empty()) {
    for (double rate : config.rates) {
      config.rate = rate;  // the runner reads the configuration it was made with, this object
      rows.push_back(measure(0));
    }
  } else if (config.rate > 0) {
    rows.push_back(measure(0));
  } else {
    for (int level : config.concurrency) rows.push_back(measure(level));
  }
  return rows;
}

}  // namespace gpusort::cli
