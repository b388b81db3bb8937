// `gpusort sort`: the keys of a file sorted by the server, with their permutation or moved values if
// asked. A 2-D array (R x C) sorts each of its R rows, like numpy.sort(a, axis=-1); its indices count
// from each row's start, and the output keeps the shape.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client/cli/cli_common.h"
#include "client/cli/sort_values.h"
#include "client/cli/subcommand.h"

namespace gpusort::cli {
namespace {

class SortCommand final : public Subcommand {
 public:
  explicit SortCommand(CLI::App& app) : Subcommand(app.add_subcommand("sort", "sort the keys of a file")) {
    AddConnectionFlags(app_, &connection_);
    AddFileFlags(app_, &files_);
    app_->add_flag("--descending", descending_, "largest first");
    app_->add_flag("--stable", stable_, "equal keys keep their input order");
    app_->add_flag("--argsort", argsort_, "write the permutation (int64) to --out instead of keys");
    app_->add_option("--indices-out", indices_out_, "also write the permutation (int64) here");
    app_->add_option("--values", values_in_,
                     "values moved with their keys: a .npy of any dtype (one per key), or raw with --value-width");
    app_->add_option("--value-width", value_width_, "bytes per value of a raw --values file (1 to 256)");
    app_->add_option("--values-out", values_out_, "where the values go, in their keys' new order (with --values)");
    app_->add_option("--algorithm,-a", algorithm_)->check(CLI::IsMember(AlgorithmNames()))->capture_default_str();
  }

  int Run() override {
    int exit_code = 0;
    std::optional<Array> input = ReadInputOrReport(files_, &exit_code);
    if (!input.has_value()) return exit_code;
    const bool two_d = input->shape.size() == 2;
    const bool want_indices = argsort_ || !indices_out_.empty();
    if (absl::Status s = CheckOutput(files_, files_.out, argsort_ ? DType::kInt64 : input->dtype); !s.ok()) {
      return Fail(s);
    }
    auto values = ReadValues(values_in_, value_width_, values_out_, input->count(), want_indices);
    if (!values.ok()) return Usage(values.status());
    auto made = MakeClient(connection_);
    if (!made.ok()) return FailToConnect(made.status());
    auto result = (*made)->SortRaw(Request(*input, want_indices, *values));
    if (!result.ok()) return Fail(result.status());
    if (connection_.verbose) PrintInfo(result->info, result->streamed, connection_.transport);
    const std::vector<std::size_t> shape = two_d ? input->shape : std::vector<std::size_t>{input->count()};
    Array keys{.dtype = input->dtype, .bytes = std::move(result->keys), .shape = shape};
    Array indices{.dtype = DType::kInt64, .bytes = std::move(result->indices), .shape = shape};
    absl::Status s = WriteOutput(files_, files_.out, argsort_ ? indices : keys);
    if (s.ok() && !indices_out_.empty()) s = WriteOutput(files_, indices_out_, indices);
    if (s.ok() && values->has_value()) {
      Array moved = std::move(**values);
      moved.bytes = std::move(result->values);
      auto format = ChooseWriteFormat("", values_out_);
      s = format.ok() ? WriteArray(values_out_, *format, moved) : format.status();
    }
    return s.ok() ? 0 : Fail(s);
  }

 private:
  // The request for `input`'s keys (rows for a 2-D array), with indices or `values` as asked.
  RawSortRequest Request(const Array& input, bool want_indices, const std::optional<Array>& values) const {
    RawSortRequest request;
    request.dtype = input.dtype;
    request.keys = input.bytes;
    request.options.descending = descending_;
    request.options.stable = stable_;
    request.options.algorithm = ParseAlgorithmFlag(algorithm_);
    request.options.rows = input.shape.size() == 2 ? input.shape[0] : 1;
    if (want_indices) request.payload = Payload::kIndices;
    if (values.has_value()) {
      request.payload = Payload::kValues;
      request.values = values->bytes;
      request.value_width = static_cast<uint32_t>(values->bytes.size() / std::max<std::size_t>(1, input.count()));
    }
    return request;
  }

  Connection connection_;
  InputFlags files_;
  bool descending_ = false, stable_ = false, argsort_ = false;
  std::string algorithm_ = "auto", indices_out_, values_in_, values_out_;
  uint32_t value_width_ = 0;
};

}  // namespace

std::unique_ptr<Subcommand> AddSortCommand(CLI::App& app) { return std::make_unique<SortCommand>(app); }

}  // namespace gpusort::cli
