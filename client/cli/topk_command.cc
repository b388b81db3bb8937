// `gpusort topk`: the k largest (or smallest) keys of a file, per row, with their positions if asked.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client/cli/cli_common.h"
#include "client/cli/subcommand.h"

namespace gpusort::cli {
namespace {

class TopKCommand final : public Subcommand {
 public:
  explicit TopKCommand(CLI::App& app)
      : Subcommand(app.add_subcommand("topk", "the k largest (or smallest) keys of a file, per row")) {
    AddConnectionFlags(app_, &connection_);
    AddFileFlags(app_, &files_);
    app_->add_option("-k", k_, "how many per row (1 or more)")->check(AtLeastOne())->capture_default_str();
    app_->add_option("--rows", rows_, "rows of equal length (default: 2-D .npy rows, else 1)");
    app_->add_flag("--smallest", smallest_, "the k smallest instead of the largest");
    app_->add_flag("--unsorted", unsorted_, "any order within each row's k");
    app_->add_option("--output", output_, "values, indices, or both (indices to --indices-out)")
        ->check(CLI::IsMember({"values", "indices", "both"}))
        ->capture_default_str();
    app_->add_option("--indices-out", indices_out_, "where --output both writes the indices");
    app_->add_option("--algorithm,-a", algorithm_)->check(CLI::IsMember(AlgorithmNames()))->capture_default_str();
  }

  int Run() override {
    int exit_code = 0;
    std::optional<Array> input = ReadInputOrReport(files_, &exit_code);
    if (!input.has_value()) return exit_code;
    if (rows_ == 0) rows_ = input->shape.size() == 2 ? input->shape[0] : 1;
    if (output_ == "both" && indices_out_.empty()) {
      return Usage(absl::InvalidArgumentError("--output both needs --indices-out"));
    }
    const DType out_dtype = output_ == "indices" ? DType::kInt64 : input->dtype;
    if (absl::Status s = CheckOutput(files_, files_.out, out_dtype); !s.ok()) return Fail(s);
    auto made = MakeClient(connection_);
    if (!made.ok()) return FailToConnect(made.status());
    auto result = (*made)->TopKRaw(input->dtype, input->bytes, Options());
    if (!result.ok()) return Fail(result.status());
    if (connection_.verbose) PrintInfo(result->info, result->streamed, connection_.transport);
    std::vector<std::size_t> shape =
        rows_ > 1 || input->shape.size() == 2 ? std::vector<std::size_t>{rows_, k_} : std::vector<std::size_t>{k_};
    Array values{.dtype = input->dtype, .bytes = std::move(result->values), .shape = shape};
    Array indices{.dtype = DType::kInt64, .bytes = std::move(result->indices), .shape = shape};
    absl::Status s = WriteOutput(files_, files_.out, output_ == "indices" ? indices : values);
    if (s.ok() && output_ == "both") s = WriteOutput(files_, indices_out_, indices);
    return s.ok() ? 0 : Fail(s);
  }

 private:
  TopKOptions Options() const {
    TopKOptions options;
    options.k = k_;
    options.largest = !smallest_;
    options.sorted = !unsorted_;
    options.rows = rows_;
    options.algorithm = ParseAlgorithmFlag(algorithm_);
    options.output = output_ == "values"    ? TopKOutput::kValues
                     : output_ == "indices" ? TopKOutput::kIndices
                                            : TopKOutput::kValuesAndIndices;
    return options;
  }

  Connection connection_;
  InputFlags files_;
  uint64_t k_ = 10, rows_ = 0;
  bool smallest_ = false, unsorted_ = false;
  std::string output_ = "values", algorithm_ = "auto", indices_out_;
};

}  // namespace

std::unique_ptr<Subcommand> AddTopKCommand(CLI::App& app) { return std::make_unique<TopKCommand>(app); }

}  // namespace gpusort::cli
