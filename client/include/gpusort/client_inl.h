// Template definitions of gpusort/client.h: the typed calls are thin wrappers over the raw ones.
#pragma once

#include <cstring>
#include <string>
#include <type_traits>

namespace gpusort {

template <typename T>
constexpr client::DType WireDTypeOf() {
  if constexpr (std::is_same_v<T, int32_t>) return client::DType::kInt32;
  else if constexpr (std::is_same_v<T, uint32_t>) return client::DType::kUint32;
  else if constexpr (std::is_same_v<T, int64_t>) return client::DType::kInt64;
  else if constexpr (std::is_same_v<T, uint64_t>) return client::DType::kUint64;
  else if constexpr (std::is_same_v<T, float>) return client::DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>) return client::DType::kFloat64;
  else if constexpr (std::is_same_v<T, int16_t>) return client::DType::kInt16;
  else if constexpr (std::is_same_v<T, uint16_t>) return client::DType::kUint16;
  else if constexpr (std::is_same_v<T, int8_t>) return client::DType::kInt8;
  else if constexpr (std::is_same_v<T, uint8_t>) return client::DType::kUint8;
  // float16 and bfloat16 have no standard C++20 type: send their bits through the raw calls.
  else static_assert(sizeof(T) == 0, "typed gpusort keys are 8- to 64-bit integers, float and double");
}

namespace client_internal {

template <typename T>
std::string_view AsBytes(std::span<const T> v) {
  return {reinterpret_cast<const char*>(v.data()), v.size_bytes()};
}

template <typename T>
std::vector<T> FromBytes(const std::string& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

template <typename T>
absl::StatusOr<SortResult<T>> ToTyped(absl::StatusOr<RawSortResult> raw) {
  if (!raw.ok()) return raw.status();
  SortResult<T> result;
  result.keys = FromBytes<T>(raw->keys);
  result.indices = FromBytes<int64_t>(raw->indices);
  result.values = std::move(raw->values);
  result.info = std::move(raw->info);
  return result;
}

template <typename T>
RawSortRequest MakeRawSortRequest(std::span<const T> keys, const SortOptions& options) {
  RawSortRequest request;
  request.dtype = WireDTypeOf<T>();
  request.keys = AsBytes(keys);
  request.options = options;
  return request;
}

}  // namespace client_internal

template <typename T>
absl::StatusOr<SortResult<T>> Client::Sort(std::span<const T> keys, const SortOptions& options) {
  return client_internal::ToTyped<T>(SortRaw(client_internal::MakeRawSortRequest(keys, options)));
}

template <typename T>
absl::StatusOr<client::ExecutionInfo> Client::SortInto(std::span<const T> keys, std::span<T> out,
                                                       const SortOptions& options) {
  return SortRawInto(client_internal::MakeRawSortRequest(keys, options), std::as_writable_bytes(out));
}

template <typename T>
absl::StatusOr<SortResult<T>> Client::Argsort(std::span<const T> keys,
                                              const SortOptions& options) {
  RawSortRequest request = client_internal::MakeRawSortRequest(keys, options);
  request.payload = client::Payload::kIndices;
  return client_internal::ToTyped<T>(SortRaw(request));
}

template <typename T>
absl::StatusOr<SortResult<T>> Client::SortWithValues(std::span<const T> keys,
                                                     std::string_view values,
                                                     uint32_t value_width,
                                                     const SortOptions& options) {
  RawSortRequest request = client_internal::MakeRawSortRequest(keys, options);
  request.payload = client::Payload::kValues;
  request.values = values;
  request.value_width = value_width;
  return client_internal::ToTyped<T>(SortRaw(request));
}

template <typename T, typename V>
absl::StatusOr<std::pair<SortResult<T>, std::vector<V>>> Client::SortWithValues(const std::vector<T>& keys,
                                                                                const std::vector<V>& values,
                                                                                const SortOptions& options) {
  static_assert(std::is_trivially_copyable_v<V>, "values travel as their bytes");
  static_assert(sizeof(V) >= 1 && sizeof(V) <= 256, "a value is 1 to 256 bytes (SortOptions.value_width)");
  if (values.size() != keys.size()) {
    return absl::InvalidArgumentError("SortWithValues: " + std::to_string(values.size()) + " values for " +
                                      std::to_string(keys.size()) + " keys");
  }
  auto sorted = SortWithValues(std::span<const T>(keys), client_internal::AsBytes(std::span<const V>(values)),
                               static_cast<uint32_t>(sizeof(V)), options);
  if (!sorted.ok()) return sorted.status();
  std::vector<V> moved = client_internal::FromBytes<V>(sorted->values);
  sorted->values.clear();
  return std::pair<SortResult<T>, std::vector<V>>(*std::move(sorted), std::move(moved));
}

template <typename T>
absl::StatusOr<TopKResult<T>> Client::TopK(std::span<const T> keys, const TopKOptions& options) {
  auto raw = TopKRaw(WireDTypeOf<T>(), client_internal::AsBytes(keys), options);
  if (!raw.ok()) return raw.status();
  TopKResult<T> result;
  result.values = client_internal::FromBytes<T>(raw->values);
  result.indices = client_internal::FromBytes<int64_t>(raw->indices);
  result.info = std::move(raw->info);
  return result;
}

}  // namespace gpusort
