#include "server/service/auth.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>

namespace gpusort {
namespace {

constexpr std::string_view kBearer = "bearer ";  // RFC 6750: the scheme is case-insensitive

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool StartsWithCaseless(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

}  // namespace

std::optional<std::string_view> BearerToken(std::string_view authorization) {
  if (!StartsWithCaseless(authorization, kBearer)) return std::nullopt;
  const std::string_view token = Trim(authorization.substr(kBearer.size()));
  if (token.empty()) return std::nullopt;
  return token;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

absl::StatusOr<std::unique_ptr<TokenAuth>> TokenAuth::FromText(std::string_view text, const std::string& source) {
  std::vector<Digest> digests;
  int line_number = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    ++line_number;
    const std::string_view token = Trim(text.substr(pos, end - pos));
    pos = end + 1;
    if (token.empty() || token.front() == '#') continue;
    for (char c : token) {
      // What an HTTP/2 header value (and so gRPC metadata) can carry after "Bearer ": visible ASCII.
      if (c <= ' ' || c > '~') {
        return absl::InvalidArgumentError("--auth-tokens-file " + source + " line " + std::to_string(line_number) +
                                          ": a token must be printable ASCII without spaces");
      }
    }
    Digest d;
    SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), d.data());
    digests.push_back(d);
  }
  if (digests.empty()) {
    return absl::InvalidArgumentError("--auth-tokens-file " + source +
                                      " holds no token (one per line; # starts a comment)");
  }
  return std::unique_ptr<TokenAuth>(new TokenAuth(std::move(digests)));
}

absl::StatusOr<std::unique_ptr<TokenAuth>> TokenAuth::FromFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError("cannot read --auth-tokens-file " + path + ": " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError("error reading --auth-tokens-file " + path);
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & S_IROTH) != 0)
    spdlog::warn("--auth-tokens-file {} is readable by every user on this host", path);
  return FromText(text.str(), path);
}

bool TokenAuth::Known(std::string_view token) const {
  Digest presented;
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), presented.data());
  const std::string_view p(reinterpret_cast<const char*>(presented.data()), presented.size());
  bool found = false;
  for (const Digest& d : digests_) {  // no early exit: which token matched does not show in the time
    found |= ConstantTimeEquals(p, std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
  }
  return found;
}

absl::Status TokenAuth::CheckAuthorization(const std::string_view* header) const {
  if (header == nullptr) {
    return absl::UnauthenticatedError(
        "this server requires a bearer token: send the metadata 'authorization: Bearer <token>' "
        "(gpusort CLI: --token-file; client library: ClientOptions::bearer_token)");
  }
  const std::optional<std::string_view> token = BearerToken(*header);
  if (!token.has_value()) return absl::UnauthenticatedError("the authorization metadata must be 'Bearer <token>'");
  if (!Known(*token)) {
    return absl::PermissionDeniedError("the bearer token is not one this server accepts");
  }
  return absl::OkStatus();
}

absl::Status TokenAuth::Check(const grpc::CallbackServerContext& context) const {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return CheckAuthorization(nullptr);
  const std::string_view header(it->second.data(), it->second.size());
  return CheckAuthorization(&header);
}

}  // namespace gpusort
