// `gpusort gen`: test data, written as a raw, text or .npy file.
#include <cstdint>
#include <string>
#include <utility>

#include "client/cli/array_file.h"
#include "client/cli/cli_common.h"
#include "client/cli/dtype_names.h"
#include "client/cli/generate.h"
#include "client/cli/subcommand.h"

namespace gpusort::cli {
namespace {

class GenCommand final : public Subcommand {
 public:
  explicit GenCommand(CLI::App& app) : Subcommand(app.add_subcommand("gen", "write test data")) {
    app_->add_option("--dtype,-t", dtype_, kDTypeHelp)->capture_default_str();
    app_->add_option("--count,-n", count_, "number of keys (K M G: powers of 1024; or 1e6)")
        ->transform(CLI::AsSizeValue(false).description(""))  // a count of keys: no byte units in --help
        ->transform(ScientificCount())  // CLI11 runs the last transform added first
        ->capture_default_str();
    app_->add_option("--distribution,-d", distribution_)->check(CLI::IsMember(Distributions()))->capture_default_str();
    app_->add_option("--seed", seed_)->capture_default_str();
    app_->add_option("--out,-o", out_, "output file")->required();
    app_->add_option("--format", format_, "raw, text or npy (default: by extension)");
  }

  int Run() override {
    auto dtype = ParseDTypeFlag(dtype_);
    if (!dtype.ok()) return Usage(dtype.status());
    auto bytes = Generate(*dtype, count_, distribution_, seed_);
    if (!bytes.ok()) return Fail(bytes.status());
    auto format = ChooseWriteFormat(format_, out_);
    if (!format.ok()) return Fail(format.status());
    Array array{.dtype = *dtype, .bytes = std::move(*bytes), .shape = {count_}};
    absl::Status written = WriteArray(out_, *format, array);
    return written.ok() ? 0 : Fail(written);
  }

 private:
  std::string dtype_ = "u32", distribution_ = "uniform", out_, format_;
  std::size_t count_ = 1000;
  uint64_t seed_ = 1;
};

}  // namespace

std::unique_ptr<Subcommand> AddGenCommand(CLI::App& app) { return std::make_unique<GenCommand>(app); }

}  // namespace gpusort::cli
