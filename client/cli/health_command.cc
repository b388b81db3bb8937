// `gpusort health`: every server of --server (a comma-separated list is checked one by one, not
// balanced over), one line each; 0 only when every one is SERVING.
#include <cstdio>
#include <string>
#include <vector>

#include "client/cli/cli_common.h"
#include "client/cli/subcommand.h"

namespace gpusort::cli {
namespace {

class HealthCommand final : public Subcommand {
 public:
  explicit HealthCommand(CLI::App& app)
      : Subcommand(app.add_subcommand("health", "exit 0 when the server (every one of a list) is SERVING")) {
    AddConnectionFlags(app_, &connection_);
    app_->add_option("--service", service_, "service name ('' = the whole server)");
  }

  int Run() override {
    const std::vector<std::string> servers = SplitServerList(connection_.server);
    bool all_serving = !servers.empty();
    for (const std::string& server : servers) {
      Connection one = connection_;
      one.server = server;
      auto made = MakeClient(one);
      absl::StatusOr<bool> serving = made.ok() ? (*made)->Health(service_) : absl::StatusOr<bool>(made.status());
      const std::string state = !serving.ok() ? absl::StatusCodeToString(serving.status().code())
                                : *serving    ? "SERVING"
                                              : "NOT_SERVING";
      if (servers.size() == 1 && !serving.ok()) return Fail(serving.status());
      if (servers.size() == 1) {
        std::printf("%s\n", state.c_str());
      } else {
        std::printf("%s %s%s%s\n", server.c_str(), state.c_str(), serving.ok() ? "" : ": ",
                    serving.ok() ? "" : std::string(serving.status().message()).c_str());
      }
      all_serving &= serving.ok() && *serving;
    }
    return all_serving ? 0 : 1;
  }

 private:
  Connection connection_;
  std::string service_;
};

}  // namespace

std::unique_ptr<Subcommand> AddHealthCommand(CLI::App& app) { return std::make_unique<HealthCommand>(app); }

}  // namespace gpusort::cli
