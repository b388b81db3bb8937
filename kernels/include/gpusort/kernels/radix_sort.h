// Radix sort of order-preserving key bits on the device (CUB DeviceRadixSort).
//
// Keys arrive already mapped to unsigned "ordered bits" (server/core/key_order.h: the float total order,
// signed integers and descending order all become an ascending unsigned order), so the device only ever
// sorts unsigned integers and every dtype and order agrees bit for bit with the CPU backend. CUB's own
// float handling would tie -0.0 with +0.0, which the API's total order does not. The sort is stable.
//
// Only bits [begin_bit, end_bit) are sorted: the caller passes the bits that vary across the keys
// (found while it stages them), and keys that agree outside that range keep their relative order.
#pragma once

#include <cstddef>
#include <string>

#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/status.h"

namespace gpusort::kernels {

// uint32_t, uint64_t or uint16_t ordered bits. The 16-bit width is taken by the selections SMALL_K and
// RADIX_SELECT only (top_k.h), for 16-bit keys read as they are; every other kernel refuses it
// (RefuseKeyWidth16).
enum class KeyWidth { k32, k64, k16 };

// INVALID_ARGUMENT naming `kernel` for the 16-bit width, which only SMALL_K and RADIX_SELECT take.
inline Status RefuseKeyWidth16(KeyWidth width, const char* kernel) {
  if (width != KeyWidth::k16) return Status::Ok();
  return Status(StatusCode::kInvalidArgument, std::string(kernel) + " takes 32- or 64-bit keys, not 16-bit");
}

enum class Payload {
  kNone,
  kU32,       // 4-byte values travel with the keys
  kU64,       // 8-byte values travel with the keys
  kIndexU32,  // the sort writes each key's input position (0..count-1) as a uint32_t payload
};

// Two buffers per array: CUB ping-pongs between them and says which one holds the result.
struct RadixSortArgs {
  KeyWidth key_width = KeyWidth::k32;
  Payload payload = Payload::kNone;
  std::size_t count = 0;       // at most 2^31 - 1 (CUB's int offsets; larger is kInvalidArgument)
  void* keys[2] = {nullptr, nullptr};    // keys[0]: input; keys[1]: scratch of the same size
  void* values[2] = {nullptr, nullptr};  // payload buffers (kIndexU32: count uint32_t each); input in [0]
  int begin_bit = 0;
  int end_bit = 32;  // <= 32 or 64 by key_width
  // keys[0] is only read (it may be a caller's memory, const to us) and the sorted keys end in keys[1],
  // with CUB's second buffer in temp (RadixSortTempBytes counts it). Keys alone (Payload::kNone).
  bool keep_input = false;
};

// Device temporary bytes RadixSort needs for these arguments (pointers may be null here).
Status RadixSortTempBytes(const RadixSortArgs& args, std::size_t* bytes);

// Sorts on `stream`. On return (asynchronously complete), keys[*result] and values[*result] hold the
// sorted keys and their payload.
Status RadixSort(const RadixSortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream,
                 int* result);

}  // namespace gpusort::kernels
