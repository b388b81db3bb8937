#include "server/transport/grpc/echo_service.h"

#include "server/transport/grpc/grpc_hand_off.h"
#include "server/transport/grpc/refused_call.h"

namespace gpusort {
namespace {

// Reads one message, writes it back, reads the next: the reply to message i goes out before message
// i+1 is read, so a client that pipelines its writes sees gRPC's flow control, as a Sort stream would.
class EchoStreamReactor final : public grpc::ServerBidiReactor<v1::EchoMessage, v1::EchoMessage> {
 public:
  EchoStreamReactor() {
    StartOnGrpc(this, [&] { StartRead(&message_); });
  }
  void OnReadDone(bool ok) override {
    AcquireFromGrpc(this);
    if (!ok) return StartOnGrpc(this, [&] { Finish(grpc::Status::OK); });
    StartOnGrpc(this, [&] { StartWrite(&message_); });
  }
  void OnWriteDone(bool ok) override {
    AcquireFromGrpc(this);
    if (!ok) {
      return StartOnGrpc(this, [&] { Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the caller went away")); });
    }
    StartOnGrpc(this, [&] { StartRead(&message_); });
  }
  void OnDone() override {
    AcquireFromGrpc(this);
    delete this;
  }

 private:
  v1::EchoMessage message_;
};

}  // namespace

grpc::ServerUnaryReactor* EchoService::Echo(grpc::CallbackServerContext* context, const v1::EchoMessage* request,
                                            v1::EchoMessage* response) {
  AcquireFromGrpc(this);
  if (auth_ != nullptr) {
    if (absl::Status s = auth_->Check(*context); !s.ok()) return RefuseUnary(context, s);
  }
  // gRPC built the request for this call alone and never reads it again: move its bytes, as Sort does.
  response->mutable_data()->swap(*const_cast<v1::EchoMessage*>(request)->mutable_data());
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerBidiReactor<v1::EchoMessage, v1::EchoMessage>* EchoService::EchoStream(grpc::CallbackServerContext* context) {
  AcquireFromGrpc(this);
  if (auth_ != nullptr) {
    if (absl::Status s = auth_->Check(*context); !s.ok()) return new RefusedBidiCall<v1::EchoMessage, v1::EchoMessage>(s);
  }
  return new EchoStreamReactor();
}

}  // namespace gpusort
