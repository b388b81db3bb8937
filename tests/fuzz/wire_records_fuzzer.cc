// The fixed-layout records beside sort.proto, as a peer on the host or the network sends them: the
// shared-memory socket's registration request and call record (gpusort/v1/region_socket.h,
// region_calls.h) and the data port's part header (data_socket.h). The first input byte picks the
// decoder; the rest is the record.
//
// What must hold: a record that decodes is exactly the one its decoded fields encode back to (when its
// reserved bytes are zero; the decoder reports whether they were), so no two byte strings mean the same
// record and no byte of a record is silently skipped; a call record's lengths add up to its size and stay
// within the format's limit; nothing reads past the input (ASan).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_check.h"
#include "gpusort/v1/data_socket.h"
#include "gpusort/v1/region_calls.h"
#include "gpusort/v1/region_socket.h"

namespace {

template <typename Encoded>
bool Same(const Encoded& encoded, std::span<const std::byte> in) {
  if (encoded.size() != in.size()) return false;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (encoded[i] != in[i]) return false;
  }
  return true;
}

void CallRecord(std::span<const std::byte> in) {
  namespace wire = gpusort::v1::region_calls;
  const auto call = wire::DecodeCall(in);
  if (!call.has_value()) return;
  FUZZ_CHECK(in.size() <= wire::kMaxCallBytes);
  FUZZ_CHECK(wire::kHeadBytes + call->token.size() + call->request_id.size() + call->request.size() == in.size());
  if (call->reserved_zero) FUZZ_CHECK(Same(wire::EncodeCall(*call), in));
}

void AnswerRecord(std::span<const std::byte> in) {
  namespace wire = gpusort::v1::region_calls;
  const auto answer = wire::DecodeAnswer(in);
  if (!answer.has_value()) return;
  FUZZ_CHECK(answer->message.size() <= wire::kMaxMessageBytes);
  const auto encoded = wire::EncodeAnswer(answer->code, answer->message, answer->response, answer->flags);
  // The answer's reserved bytes (20-31) are not decoded: equal where they are zero.
  bool reserved_zero = true;
  for (std::size_t i = 20; i < 32; ++i) reserved_zero = reserved_zero && in[i] == std::byte{0};
  if (reserved_zero) FUZZ_CHECK(Same(encoded, in));
}

void RegistrationRecord(std::span<const std::byte> in) {
  namespace wire = gpusort::v1::region_socket;
  const auto request = wire::DecodeRequest(in);
  if (request.has_value() && request->reserved_zero) FUZZ_CHECK(Same(wire::EncodeRequest(*request), in));
}

void PartHeader(std::span<const std::byte> in) {
  namespace wire = gpusort::v1::data_socket;
  const auto request = wire::DecodeRequest(in);
  if (request.has_value() && request->reserved_zero) FUZZ_CHECK(Same(wire::EncodeRequest(*request), in));
  const auto reply = wire::DecodeReply(in);
  if (reply.has_value()) FUZZ_CHECK(reply->text_length <= wire::kMaxReasonBytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // A copy of exactly the record's bytes, so that ASan sees any read past it.
  const std::vector<std::byte> record(reinterpret_cast<const std::byte*>(data) + 1,
                                      reinterpret_cast<const std::byte*>(data) + size);
  switch (data[0] % 4) {
    case 0: CallRecord(record); break;
    case 1: AnswerRecord(record); break;
    case 2: RegistrationRecord(record); break;
    default: PartHeader(record); break;
  }
  return 0;
}
