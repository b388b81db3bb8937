// gpusort: the command line on the client library. Subcommands: gen, sort, topk, health, bench, each in
// a file of its own (subcommand.h); this file parses the command line and runs the one it names.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "client/cli/cli_common.h"
#include "client/cli/subcommand.h"

int main(int argc, char** argv) {
  using namespace gpusort::cli;
  CLI::App app{"gpusort: sort and top-k through a gpusort server"};
  app.set_version_flag("--version", std::string("gpusort ") + GPUSORT_VERSION);
  app.require_subcommand(1);
  app.footer(kExitCodes);
  std::vector<std::unique_ptr<Subcommand>> commands;
  for (auto add : {AddGenCommand, AddSortCommand, AddTopKCommand, AddHealthCommand, AddBenchCommand}) {
    commands.push_back(add(app));
  }
  for (CLI::App* subcommand : app.get_subcommands({})) subcommand->footer(kExitCodes);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are 0; every bad flag or value is 2, whatever CLI11's own code for it.
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  for (const auto& command : commands) {
    if (command->chosen()) return command->Run();
  }
  return 0;
}
