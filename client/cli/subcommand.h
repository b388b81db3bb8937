// One subcommand of the gpusort CLI: it adds itself and its flags to the app, and runs once the app has
// parsed the command line to it. Each lives in a file of its own (gen_command.cc, sort_command.cc,
// topk_command.cc, health_command.cc, bench_command.cc); main.cc only parses and dispatches.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

namespace gpusort::cli {

class Subcommand {
 public:
  virtual ~Subcommand() = default;
  // Whether the command line named this subcommand.
  bool chosen() const { return app_ != nullptr && app_->parsed(); }
  // The exit code (cli_common.h, kExitCodes).
  virtual int Run() = 0;

 protected:
  // Flags bind to the subcommand's members: a Subcommand never moves once it has added them.
  explicit Subcommand(CLI::App* app) : app_(app) {}
  CLI::App* app_;
};

// In the order --help lists them.
std::unique_ptr<Subcommand> AddGenCommand(CLI::App& app);
std::unique_ptr<Subcommand> AddSortCommand(CLI::App& app);
std::unique_ptr<Subcommand> AddTopKCommand(CLI::App& app);
std::unique_ptr<Subcommand> AddHealthCommand(CLI::App& app);
std::unique_ptr<Subcommand> AddBenchCommand(CLI::App& app);

}  // namespace gpusort::cli
