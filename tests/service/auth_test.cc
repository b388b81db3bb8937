// Bearer tokens (server/service/auth.h): the token file's format, the answers for no, a malformed, a
// wrong and a right token, and the comparison itself.
#include "server/service/auth.h"
#include "server/service/caller_identity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpusort {
namespace {

using ::testing::HasSubstr;

absl::Status CheckHeader(const TokenAuth& auth, std::string_view header) {
  return auth.CheckAuthorization(&header);
}

TEST(TokenFile, OneTokenPerLineSkippingBlanksAndComments) {
  auto auth = TokenAuth::FromText("# ops\n\nfirst-token\n  second-token\t\r\n# old: third-token\nlast", "t");
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_EQ((*auth)->size(), 3u);
  EXPECT_TRUE(CheckHeader(**auth, "Bearer first-token").ok());
  EXPECT_TRUE(CheckHeader(**auth, "Bearer second-token").ok());
  EXPECT_TRUE(CheckHeader(**auth, "Bearer last").ok());
  EXPECT_EQ(CheckHeader(**auth, "Bearer third-token").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(CheckHeader(**auth, "Bearer # old: third-token").code(), absl::StatusCode::kPermissionDenied);
}

TEST(TokenFile, NoTokenOrAnUnsendableOneIsAnError) {
  for (std::string_view text : {"", "\n\n", "# only a comment\n   \n"}) {
    auto auth = TokenAuth::FromText(text, "empty.txt");
    EXPECT_EQ(auth.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(auth.status().message(), HasSubstr("empty.txt holds no token"));
  }
  auto spaced = TokenAuth::FromText("ok\ntwo words\n", "f");
  EXPECT_THAT(spaced.status().message(), HasSubstr("line 2"));
  EXPECT_FALSE(TokenAuth::FromText("caf\xc3\xa9\n", "f").ok());
  EXPECT_EQ(TokenAuth::FromFile("/nonexistent/tokens").status().code(), absl::StatusCode::kNotFound);
}

TEST(TokenCheck, MissingIsUnauthenticatedWrongIsPermissionDenied) {
  auto auth = TokenAuth::FromText("s3cret\n", "t");
  ASSERT_TRUE(auth.ok());
  const absl::Status none = (*auth)->CheckAuthorization(nullptr);
  EXPECT_EQ(none.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(none.message(), HasSubstr("authorization: Bearer <token>"));
  for (std::string_view malformed : {"", "s3cret", "Basic czNjcmV0", "Bearer", "Bearer   ", "Bearers3cret"})
    EXPECT_EQ(CheckHeader(**auth, malformed).code(), absl::StatusCode::kUnauthenticated) << malformed;
  for (std::string_view wrong : {"Bearer s3cre", "Bearer s3cret2", "Bearer S3CRET", "Bearer x"}) {
    const absl::Status s = CheckHeader(**auth, wrong);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << wrong;
    EXPECT_THAT(s.message(), HasSubstr("not one this server accepts"));
  }
  for (std::string_view right : {"Bearer s3cret", "bearer s3cret", "BEARER s3cret", "Bearer  s3cret "})
    EXPECT_TRUE(CheckHeader(**auth, right).ok()) << right;
}

// One caller whatever the spelling: the shares (CallerIdentity) key on the token as authentication reads
// it, on gRPC and on the shared-memory socket alike (issue 41).
TEST(TokenCheck, EverySpellingOfOneTokenIsOneCaller) {
  const std::string identity = TokenCallerIdentity("Bearer s3cret");
  EXPECT_THAT(identity, ::testing::MatchesRegex("token:[0-9a-f]{16}"));
  for (std::string_view spelling : {"bearer s3cret", "BEARER s3cret", "Bearer  s3cret", "Bearer s3cret ",
                                    "bEaReR \t s3cret\t ", "Bearer s3cret\r"}) {
    EXPECT_EQ(TokenCallerIdentity(spelling), identity) << spelling;
    EXPECT_EQ(BearerToken(spelling), std::optional<std::string_view>("s3cret")) << spelling;
  }
  EXPECT_NE(TokenCallerIdentity("Bearer S3cret"), identity);  // the token's bytes themselves still count
  EXPECT_NE(TokenCallerIdentity("Bearer s3cret2"), identity);
  for (std::string_view none : {"", "Basic s3cret", "Bearer", "Bearer   ", "Bearers3cret"}) {
    EXPECT_EQ(BearerToken(none), std::nullopt) << none;
    EXPECT_EQ(TokenCallerIdentity(none), "") << none;
  }
}

TEST(ConstantTime, EqualsOnlyForTheSameBytes) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "xbc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_FALSE(ConstantTimeEquals(std::string_view("a\0c", 3), std::string_view("a\0d", 3)));
}

}  // namespace
}  // namespace gpusort
