// ClientOptions -> grpc::Channel: target list, service config (load balancing, retries), TLS.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <grpcpp/grpcpp.h>

#include "client/src/channel_config.h"
#include "gpusort/client.h"

namespace gpusort {
namespace client_internal {
namespace {

// Room for options and framing beside the arrays in one message (as in client.cc).
constexpr std::size_t kMessageHeadroom = 64u << 10;
// Round-robin picks only servers whose health says SERVING for this service: a draining server turns
// NOT_SERVING at once, so the balancer stops sending it calls before it stops listening.
constexpr char kHealthService[] = "gpusort.v1.SortService";

// Schemes of gRPC's resolvers: a target naming one is passed on as it is.
bool HasResolverScheme(std::string_view target) {
  for (std::string_view scheme : {"dns:", "ipv4:", "ipv6:", "unix:", "unix-abstract:", "xds:", "vsock:"})
    if (target.substr(0, scheme.size()) == scheme) return true;
  return false;
}

struct HostPort {
  std::string host, port;
};

absl::StatusOr<HostPort> SplitHostPort(std::string_view address) {
  HostPort out;
  if (!address.empty() && address.front() == '[') {  // [v6]:port
    const std::size_t close = address.find(']');
    if (close == std::string_view::npos || close + 1 >= address.size() || address[close + 1] != ':')
      return absl::InvalidArgumentError("server address '" + std::string(address) + "' is not [ipv6]:port");
    out.host = std::string(address.substr(1, close - 1));
    out.port = std::string(address.substr(close + 2));
  } else {
    const std::size_t colon = address.rfind(':');
    if (colon == std::string_view::npos || address.find(':') != colon)
      return absl::InvalidArgumentError("server address '" + std::string(address) +
                                        "' is not host:port (IPv6: [address]:port)");
    out.host = std::string(address.substr(0, colon));
    out.port = std::string(address.substr(colon + 1));
  }
  if (out.host.empty() || out.port.empty() ||
      !std::all_of(out.port.begin(), out.port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return absl::InvalidArgumentError("server address '" + std::string(address) + "' is not host:port");
  return out;
}

// host:port -> its addresses, "a.b.c.d:port" or "[v6]:port", IPv4 first. A literal stays itself.
absl::StatusOr<std::vector<std::string>> Addresses(const HostPort& hp, bool* v6) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(hp.host.c_str(), hp.port.c_str(), &hints, &found); rc != 0)
    return absl::UnavailableError("cannot resolve server '" + hp.host + "': " + gai_strerror(rc));
  std::vector<std::string> v4s, v6s;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, text, sizeof text);
      v4s.push_back(std::string(text) + ":" + hp.port);
    } else if (a->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, text, sizeof text);
      std::string address = "[";
      address.append(text).append("]:").append(hp.port);
      v6s.push_back(std::move(address));
    }
  }
  freeaddrinfo(found);
  // A name with addresses of both families ("localhost") is dialled over IPv4: gRPC's static address
  // lists (ipv4:, ipv6:) hold one family each.
  *v6 = v4s.empty();
  std::vector<std::string>& out = v4s.empty() ? v6s : v4s;
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.empty()) return absl::UnavailableError("server '" + hp.host + "' has no address");
  return out;
}

absl::StatusOr<std::string> ReadFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot read " + std::string(what) + " file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError("error reading " + std::string(what) + " file '" + path + "'");
  return text.str();
}

// The file's contents when a file is named, else the inline PEM.
absl::StatusOr<std::string> Pem(const std::string& file, const std::string& pem, std::string_view what) {
  if (file.empty()) return pem;
  return ReadFile(file, what);
}

std::string Seconds(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3fs", ms.count() / 1000.0);
  return text;
}

}  // namespace

absl::StatusOr<ChannelTarget> ResolveTarget(const ClientOptions& options) {
  if (options.targets.size() <= 1) {
    ChannelTarget t;
    t.uri = options.targets.empty() ? options.target : options.targets.front();
    return t;
  }
  std::vector<std::string> addresses;
  int v6_count = 0;
  std::string first_host;
  for (const std::string& target : options.targets) {
    if (HasResolverScheme(target))
      return absl::InvalidArgumentError("a list of servers takes host:port entries; '" + target +
                                        "' names a resolver (give it alone as the target)");
    auto hp = SplitHostPort(target);
    if (!hp.ok()) return hp.status();
    if (first_host.empty()) first_host = target;
    bool v6 = false;
    auto found = Addresses(*hp, &v6);
    if (!found.ok()) return found.status();
    v6_count += v6;
    addresses.insert(addresses.end(), found->begin(), found->end());
  }
  if (v6_count != 0 && v6_count != static_cast<int>(options.targets.size()))
    return absl::InvalidArgumentError("a list of servers must be all IPv4 or all IPv6 (gRPC's ipv4:/ipv6: lists)");
  ChannelTarget t;
  t.uri = v6_count != 0 ? "ipv6:" : "ipv4:";
  for (std::size_t i = 0; i < addresses.size(); ++i) t.uri += (i ? "," : "") + addresses[i];
  // gRPC would take the whole list as the authority; TLS checks the first server's name instead.
  t.authority = first_host;
  t.servers = static_cast<int>(addresses.size());
  return t;
}

std::string LoadBalancingPolicy(const ClientOptions& options, int servers) {
  if (!options.load_balancing.empty()) return options.load_balancing;
  return servers > 1 ? "round_robin" : "pick_first";
}

std::string ServiceConfigJson(const std::string& policy, const RetryOptions& retry) {
  std::string json = "{\"loadBalancingConfig\":[{\"" + policy + "\":{}}]";
  if (policy == "round_robin") json += std::string(",\"healthCheckConfig\":{\"serviceName\":\"") + kHealthService + "\"}";
  if (retry.max_attempts > 1) {
    // RegisterRegion is left out on purpose (see RetryOptions in client.h). CANCELLED is retried too:
    // gRPC's server core answers CANCELLED, not UNAVAILABLE, for a call that reached a server after its
    // shutdown began and before the client saw the GOAWAY (grpc/grpc#41785), which a draining replica
    // cannot prevent. A call this client cancels itself (or whose deadline passed) is never retried.
    json += ",\"methodConfig\":[{\"name\":["
            "{\"service\":\"gpusort.v1.SortService\",\"method\":\"Sort\"},"
            "{\"service\":\"gpusort.v1.SortService\",\"method\":\"TopK\"},"
            "{\"service\":\"gpusort.v1.SortService\",\"method\":\"SortStream\"},"
            "{\"service\":\"gpusort.v1.SortService\",\"method\":\"TopKStream\"},"
            "{\"service\":\"gpusort.v1.EchoService\"}],"
            "\"retryPolicy\":{\"maxAttempts\":" + std::to_string(std::min(retry.max_attempts, 5)) +
            ",\"initialBackoff\":\"" + Seconds(std::max(retry.initial_backoff, std::chrono::milliseconds(1))) +
            "\",\"maxBackoff\":\"" + Seconds(std::max(retry.max_backoff, std::chrono::milliseconds(1))) +
            "\",\"backoffMultiplier\":" + std::to_string(retry.backoff_multiplier > 0 ? retry.backoff_multiplier : 1.0) +
            ",\"retryableStatusCodes\":[\"UNAVAILABLE\",\"CANCELLED\"]}}]";
  }
  return json + "}";
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientOptions& options, const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  if (credentials) return credentials;
  const TlsOptions& tls = options.tls;
  if (!tls.on()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  auto ca = Pem(tls.ca_file, tls.ca_pem, "TLS CA");
  if (!ca.ok()) return ca.status();
  auto cert = Pem(tls.cert_file, tls.cert_pem, "TLS client certificate");
  if (!cert.ok()) return cert.status();
  auto key = Pem(tls.key_file, tls.key_pem, "TLS client key");
  if (!key.ok()) return key.status();
  if (cert->empty() != key->empty())
    return absl::InvalidArgumentError("mutual TLS needs both a client certificate and its key");
  ssl.pem_root_certs = *ca;  // empty: gRPC's default roots
  ssl.pem_cert_chain = *cert;
  ssl.pem_private_key = *key;
  return grpc::SslCredentials(ssl);
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannelTo(
    const ClientOptions& options, const ChannelTarget& target, const grpc::ChannelArguments& extra,
    const std::shared_ptr<grpc::ChannelCredentials>& given_credentials) {
  auto credentials = MakeChannelCredentials(options, given_credentials);
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments args = extra;
  args.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes + kMessageHeadroom));
  args.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  for (const auto& [name, value] : options.channel_arguments) args.SetInt(name, value);
  args.SetServiceConfigJSON(ServiceConfigJson(LoadBalancingPolicy(options, target.servers), options.retry));
  // Ours, not one a DNS TXT record might carry.
  args.SetInt(GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION, 1);
  if (!target.authority.empty()) args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, target.authority);
  if (!options.tls.server_name.empty()) args.SetSslTargetNameOverride(options.tls.server_name);
  return grpc::CreateCustomChannel(target.uri, *credentials, args);
}

}  // namespace client_internal

std::vector<std::string> SplitServerList(std::string_view servers) {
  if (client_internal::HasResolverScheme(servers)) return {std::string(servers)};
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= servers.size()) {
    std::size_t comma = servers.find(',', start);
    if (comma == std::string_view::npos) comma = servers.size();
    std::string_view item = servers.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    start = comma + 1;
  }
  return out;
}

}  // namespace gpusort
