// The CLI's progress line (client/cli/progress_line.h): while the server works between the last byte
// sent and the first byte back, the line counts the seconds (issue 43: a 2 s sort showed nothing), and
// the ticker stops with the line.
#include "client/cli/progress_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace gpusort::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) out.append(buffer, n);
  return out;
}

TEST(ProgressLine, CountsTheServersSecondsBetweenSendAndReceive) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    auto progress = ProgressLineTo(out);
    progress("send", 1 << 20, 2 << 20);
    progress("send", 2 << 20, 2 << 20);  // all sent: the server's time starts
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    progress("receive", 2 << 20, 2 << 20);
  }
  const std::string text = Contents(out);
  EXPECT_THAT(text, HasSubstr("send         2.0 / 2.0 MiB\n"));
  EXPECT_THAT(text, HasSubstr("server"));
  // Ticks of 200 ms over 700 ms: the seconds grow, and the answer's line comes after them.
  EXPECT_THAT(text, HasSubstr("0.4 s"));
  EXPECT_LT(text.rfind("server"), text.find("receive"));
  EXPECT_THAT(text, HasSubstr("receive      2.0 / 2.0 MiB\n"));
  std::fclose(out);
}

TEST(ProgressLine, NoTickerBeforeEverythingIsSentAndNoneAfterTheLineGoes) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    auto progress = ProgressLineTo(out);
    progress("send", 1 << 20, 4 << 20);
    std::this_thread::sleep_for(std::chrono::milliseconds(450));
  }
  EXPECT_THAT(Contents(out), Not(HasSubstr("server")));
  std::FILE* second = std::tmpfile();
  ASSERT_NE(second, nullptr);
  {
    auto progress = ProgressLineTo(second);
    progress("send", 4 << 20, 4 << 20);
  }  // destroyed while the server works: the ticker stops and the line ends
  const std::string text = Contents(second);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(Contents(second), text);  // nothing written after the line went
  EXPECT_EQ(text.back(), '\n');
  std::fclose(out);
  std::fclose(second);
}

}  // namespace
}  // namespace gpusort::cli
