// The owner of a registered region acting on it while a request works on it (issue 14 item 2): cutting it
// (ftruncate) is refused by the seal, so the server can no longer be made to fault (SIGBUS); writing
// the keys meanwhile cannot make the CPU sort write past its buffers; dropping the registration lets
// the request finish on the server's own mapping. The requests run on the server's CPU path
// (ALGORITHM_CPU), whatever backend the suite runs on, and the server keeps serving after each.
#include <atomic>
#include <cerrno>
#include <future>
#include <thread>

#include "tests/service/shm_test_support.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

SortOptions OnCpu() {
  SortOptions o;
  o.algorithm = client::Algorithm::kCpu;
  return o;
}

void ExpectSortsInRegion(Client& client) {
  auto region = client.CreateSharedMemory(4000);
  ASSERT_TRUE(region.ok()) << region.status();
  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 1000, 8);
  Put(**region, 0, keys);
  auto info = client.SortInRegion(client::DType::kUint32, OnCpu(), client::Payload::kNone, (*region)->Ref(0, 4000),
                                  (*region)->Ref(0, 4000));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(Get<uint32_t>(**region, 0, 1000), ReferenceSort(keys, SortOrder::kAscending));
}

constexpr std::size_t kKeys = std::size_t{16} << 20;  // 64 MiB of uint32: a sort of a good fraction of a second
constexpr std::size_t kBytes = kKeys * sizeof(uint32_t);

TEST(SharedMemoryRace, ShrinkingARegionDuringACpuSortIsRefusedAndTheSortCompletes) {
  TestServer server(ShmConfig());
  Client client = ShmClientFor(server);
  auto region = client.CreateSharedMemory(kBytes);
  ASSERT_TRUE(region.ok()) << region.status();
  SharedMemoryRegion& r = **region;
  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, kKeys, 11);
  Put(r, 0, keys);

  auto request = std::async(std::launch::async, [&] {
    return client.SortInRegion(client::DType::kUint32, OnCpu(), client::Payload::kNone, r.Ref(0, kBytes),
                               r.Ref(0, kBytes));
  });
  // The owner tries to cut the memory under the server, again and again, for as long as the sort runs.
  int attempts = 0;
  while (request.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
    const int cut = ftruncate(r.fd(), 4096);
    const int err = errno;
    ++attempts;
    ASSERT_EQ(cut, -1) << "the owner shrank a registered region";
    ASSERT_EQ(err, EPERM) << std::strerror(err);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto info = request.get();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_GT(attempts, 0);
  struct stat st {};
  ASSERT_EQ(fstat(r.fd(), &st), 0);
  EXPECT_EQ(static_cast<std::size_t>(st.st_size), kBytes);
  EXPECT_EQ(Get<uint32_t>(r, 0, kKeys), ReferenceSort(keys, SortOrder::kAscending));
  ExpectSortsInRegion(client);
}

// The CPU sort reads its input twice (digit histograms, then the scatter they lay out) and trusted the
// two reads to agree. Keys rewritten in between by the region's owner sent the scatter far past its
// buffer: a write into the server's heap, or a crash. The server now sorts a private copy. The answer
// to such a request is whatever the keys were when copied; only the server's survival is asserted.
TEST(SharedMemoryRace, KeysRewrittenDuringACpuSortCannotCorruptTheServer) {
  TestServer server(ShmConfig());
  Client client = ShmClientFor(server);
  auto region = client.CreateSharedMemory(kBytes);
  ASSERT_TRUE(region.ok()) << region.status();
  SharedMemoryRegion& r = **region;
  auto* words = reinterpret_cast<uint32_t*>(r.data());
  std::atomic<bool> stop{false};
  // Ascending positions (three varying digits, the top one constant) and all-ones (one bucket) in turn:
  // a histogram of the one and a scatter of the other disagree about every bucket.
  std::thread owner([&] {
    for (uint32_t round = 0; !stop.load(std::memory_order_relaxed); ++round) {
      if (round % 2 == 0) {
        for (std::size_t i = 0; i < kKeys; ++i) words[i] = static_cast<uint32_t>(i);
      } else {
        std::memset(words, 0xff, kBytes);
      }
    }
  });
  for (int i = 0; i < 6; ++i) {
    auto info = client.SortInRegion(client::DType::kUint32, OnCpu(), client::Payload::kNone, r.Ref(0, kBytes),
                                    r.Ref(0, kBytes));
    EXPECT_TRUE(info.ok()) << info.status();
  }
  TopKOptions top;
  top.k = 1000;
  top.algorithm = client::Algorithm::kCpu;
  top.output = client::TopKOutput::kValues;
  const client::RegionRef half = r.Ref(0, kBytes / 2), values = r.Ref(kBytes / 2, 4000);
  for (int i = 0; i < 4; ++i) {
    auto info = client.TopKInRegion(client::DType::kUint32, top, half, &values, nullptr);
    EXPECT_TRUE(info.ok()) << info.status();
  }
  stop = true;
  owner.join();
  ExpectSortsInRegion(client);
}

TEST(SharedMemoryRace, ARegionUnregisteredDuringARequestStaysMappedUntilItEnds) {
  TestServer server(ShmConfig());
  Client client = ShmClientFor(server);
  UniqueFd memory = Memfd(kBytes);
  ASSERT_TRUE(memory.valid());
  auto* data = static_cast<uint32_t*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, memory.get(), 0));
  ASSERT_NE(data, MAP_FAILED);
  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, kKeys, 12);
  std::memcpy(data, keys.data(), kBytes);
  auto registration = SharedMemoryRegistration::Register(server.shm_socket(), memory.get(), kBytes);
  ASSERT_TRUE(registration.ok()) << registration.status();
  const client::RegionRef ref = (*registration)->Ref(0, kBytes);
  auto request = std::async(std::launch::async, [&] {
    return client.SortInRegion(client::DType::kUint32, OnCpu(), client::Payload::kNone, ref, ref);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  registration->reset();  // unregistered, most likely while the sort runs
  auto info = request.get();
  if (info.ok()) {
    std::vector<uint32_t> sorted(kKeys);
    std::memcpy(sorted.data(), data, kBytes);
    EXPECT_EQ(sorted, ReferenceSort(keys, SortOrder::kAscending));
  } else {  // the unregistration won the race to the request's validation
    EXPECT_EQ(info.status().code(), absl::StatusCode::kInvalidArgument) << info.status();
  }
  munmap(data, kBytes);
  ExpectSortsInRegion(client);
}

}  // namespace
}  // namespace gpusort::testing
