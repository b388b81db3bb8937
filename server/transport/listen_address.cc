#include "server/transport/listen_address.h"

namespace gpusort {

std::string ListenHost(const std::string& listen) {
  if (listen.starts_with("unix:")) return "127.0.0.1";
  const std::size_t colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? listen : listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host.empty() ? "0.0.0.0" : host;
}

std::string ConnectHost(const std::string& listen) {
  const std::string host = ListenHost(listen);
  if (host == "0.0.0.0") return "127.0.0.1";
  if (host == "::") return "::1";
  return host;
}

}  // namespace gpusort
