// Stage names (server/core/stage.h): one table, and the docs a caller reads list exactly its names.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "server/core/stage.h"

namespace gpusort::testing {
namespace {

std::string ReadSource(const std::string& path) {
  std::ifstream in(std::string(GPUSORT_SOURCE_DIR) + "/" + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(StageNames, EachStageHasItsOwnSnakeCaseName) {
  std::set<std::string_view> seen;
  for (std::size_t i = 0; i < kStageCount; ++i) {
    const std::string_view name = StageName(static_cast<Stage>(i));
    EXPECT_TRUE(std::regex_match(std::string(name), std::regex("[a-z][a-z0-9_]*"))) << "stage " << i << ": " << name;
    EXPECT_TRUE(seen.insert(name).second) << "two stages are called " << name;
  }
  EXPECT_EQ(StageName(Stage::kSend), "send");  // the last enumerator has the last name
}

// The proto's StageTime comment is what a caller in another language reads: it names every stage, and
// no stage that does not exist ("encode" was documented for a long time and never emitted).
TEST(StageNames, TheProtoListsExactlyTheStages) {
  const std::string proto = ReadSource("proto/gpusort/v1/sort.proto");
  const std::size_t end = proto.find("message StageTime");
  ASSERT_NE(end, std::string::npos);
  const std::size_t begin = proto.rfind("\n\n", end);
  const std::string comment = proto.substr(begin, end - begin);
  std::set<std::string> listed;
  const std::regex quoted("\"([a-z0-9_]+)\"");
  for (auto it = std::sregex_iterator(comment.begin(), comment.end(), quoted); it != std::sregex_iterator(); ++it)
    listed.insert((*it)[1]);
  std::set<std::string> stages;
  for (std::string_view name : kStageNames) stages.insert(std::string(name));
  EXPECT_EQ(listed, stages);
}

}  // namespace
}  // namespace gpusort::testing
