// A .npy file given to the CLI (`gpusort sort --in keys.npy`): its header parsed and its layout checked
// against the file's size as ReadArray does (client/cli/array_file.h, CheckNpyFile), from memory.
//
// What must hold for a file it accepts: the data run from the header's end to the file's end and hold
// exactly the elements the shape promises (counted without overflow), at most 2 dimensions, and NumPy's
// own header for that dtype and shape reads back the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "client/cli/array_file.h"
#include "client/cli/dtype_names.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace gpusort;
  const std::string_view file(reinterpret_cast<const char*>(data), size);
  const std::string_view head = file.substr(0, cli::kNpyHeadBytes);
  absl::StatusOr<cli::NpyLayout> layout = cli::CheckNpyFile(head, file.size(), std::nullopt, "fuzz.npy");
  // With --dtype given: the same answer when it agrees with the file, a refusal when it does not.
  absl::StatusOr<cli::NpyLayout> as_i32 = cli::CheckNpyFile(head, file.size(), client::DType::kInt32, "fuzz.npy");
  FUZZ_CHECK(as_i32.ok() == (layout.ok() && layout->dtype == client::DType::kInt32));
  if (!layout.ok()) return 0;

  FUZZ_CHECK(layout->shape.size() <= 2);
  std::size_t elements = 1;
  for (std::size_t d : layout->shape) FUZZ_CHECK(!__builtin_mul_overflow(elements, d, &elements));
  std::size_t bytes = 0;
  FUZZ_CHECK(!__builtin_mul_overflow(elements, cli::ElementSize(layout->dtype), &bytes));
  FUZZ_CHECK(bytes == layout->data_bytes);
  FUZZ_CHECK(layout->data_offset <= size && size - layout->data_offset == layout->data_bytes);

  const std::string ours = cli::NpyHeader(layout->dtype, layout->shape);
  absl::StatusOr<cli::NpyLayout> again = cli::CheckNpyFile(ours + std::string(file.substr(layout->data_offset)),
                                                           ours.size() + layout->data_bytes, std::nullopt, "again.npy");
  FUZZ_CHECK(again.ok() && again->dtype == layout->dtype && again->shape == layout->shape);
  return 0;
}
