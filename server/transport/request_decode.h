// Turns wire options into checked specs. Every rule a request must follow is here, once, for the
// unary and the streaming RPCs alike; failures are INVALID_ARGUMENT with a message naming the field.
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"
#include "gpusort/v1/sort.pb.h"
#include "server/core/spec.h"

namespace gpusort {

// dtype, order, payload, value_width and algorithm are known values and consistent.
absl::StatusOr<SortSpec> DecodeSortOptions(const v1::SortOptions& options);
// dtype, k, rows, output and algorithm (k and rows are checked against n by CheckTopKShape).
absl::StatusOr<TopKSpec> DecodeTopKOptions(const v1::TopKOptions& options);

// n keys from the byte lengths: keys a whole number of elements, values n * value_width bytes.
absl::StatusOr<std::size_t> CheckSortSizes(const SortSpec& spec, std::size_t key_bytes,
                                           std::size_t value_bytes);
// n keys; rows divide n and 1 <= k <= n / rows.
absl::StatusOr<std::size_t> CheckTopKShape(const TopKSpec& spec, std::size_t key_bytes);
// A Sort whose keys come in parts (SortStream parts, SortOnSockets; `method` names it to the caller):
// keys only or with indices, options.rows dividing the total, segments ending at it, and the whole within
// the request limit. `total_text` says the total as the caller sent it ("the parts' 10 keys").
absl::Status CheckSortInParts(const SortSpec& spec, uint64_t total_keys, std::string_view total_text,
                              std::string_view method, std::size_t max_request_bytes);

// Bytes of a Sort / TopK answer's arrays, to keep unary answers under the message limit.
std::size_t SortResponseBytes(const SortSpec& spec, std::size_t count);
std::size_t TopKResponseBytes(const TopKSpec& spec);

// Wire enums from internal ones.
v1::Algorithm ToProto(Algorithm a);

}  // namespace gpusort
