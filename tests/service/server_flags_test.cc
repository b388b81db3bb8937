// The server's size flags take the CLI's suffixes (issue 43: `--split-from-keys 1M` was refused while the
// CLI took size suffixes everywhere): K, M, G as powers of 1024, read before each flag's range check.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/service/config.h"

namespace gpusort {
namespace {

ServerConfig Parse(std::vector<std::string> args, int* exit_code) {
  args.insert(args.begin(), "gpusort-server");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return ParseServerFlags(static_cast<int>(argv.size()), argv.data(), exit_code);
}

TEST(ServerFlags, SizesTakeTheCliSuffixes) {
  int exit_code = 0;
  const ServerConfig c = Parse({"--max-message-bytes", "32M", "--max-request-bytes", "2G", "--shm-max-bytes", "1G",
                                "--shm-max-bytes-per-user", "512MiB", "--cuda-memory-limit-bytes", "8G",
                                "--cuda-stream-memory-bytes", "64K", "--inline-max-keys", "4K"},
                               &exit_code);
  ASSERT_EQ(exit_code, -1);
  EXPECT_EQ(c.max_message_bytes, std::size_t{32} << 20);
  EXPECT_EQ(c.max_request_bytes, std::size_t{2} << 30);
  EXPECT_EQ(c.shm_max_bytes, std::size_t{1} << 30);
  EXPECT_EQ(c.shm_max_bytes_per_user, std::size_t{512} << 20);
  EXPECT_EQ(c.cuda_memory_limit_bytes, std::size_t{8} << 30);
  EXPECT_EQ(c.cuda_stream_memory_bytes, std::size_t{64} << 10);
  EXPECT_EQ(c.inline_max_keys, 4096u);
}

TEST(ServerFlags, PlainNumbersStillWorkAndRangesStillHold) {
  int exit_code = 0;
  const ServerConfig plain = Parse({"--max-message-bytes", "1048576", "--inline-max-keys", "0"}, &exit_code);
  ASSERT_EQ(exit_code, -1);
  EXPECT_EQ(plain.max_message_bytes, std::size_t{1} << 20);
  EXPECT_EQ(plain.inline_max_keys, 0u);
  (void)Parse({"--max-message-bytes", "4G"}, &exit_code);  // over gRPC's 2 GiB message limit
  EXPECT_EQ(exit_code, 2);
  (void)Parse({"--max-message-bytes", "64Q"}, &exit_code);
  EXPECT_EQ(exit_code, 2);
  (void)Parse({"--inline-max-keys", "-1K"}, &exit_code);
  EXPECT_EQ(exit_code, 2);
}

}  // namespace
}  // namespace gpusort
