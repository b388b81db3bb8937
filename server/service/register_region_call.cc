#include "server/service/register_region_call.h"

#include <mutex>
#include <string>

#include <spdlog/spdlog.h>

#include "server/service/grpc_status.h"

namespace gpusort {
namespace {

class RegisterRegionCall final : public grpc::ServerWriteReactor<v1::RegisterRegionEvent> {
 public:
  RegisterRegionCall(ServiceCore& core, grpc::CallbackServerContext* context,
                     const v1::RegisterRegionRequest* request)
      : core_(core) {
    if (!IsLocalPeer(context->peer())) {
      End(grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                       "shared memory is only for callers on the server's host; this call came from " +
                           context->peer()));
      return;
    }
    auto id = core_.regions().Register(request->name(), request->size());
    if (!id.ok()) {
      End(ToGrpcStatus(id.status()));
      return;
    }
    id_ = *id;
    event_.set_region_id(id_);
    event_.set_size(request->size());
    StartWrite(&event_);
  }

  // The call stays open after the event: it is the registration.
  void OnWriteDone(bool ok) override {
    if (!ok) End(grpc::Status(grpc::StatusCode::CANCELLED, "the caller went away"));
  }
  void OnCancel() override { End(grpc::Status(grpc::StatusCode::CANCELLED, "region unregistered")); }
  void OnDone() override {
    if (!id_.empty()) core_.regions().Unregister(id_);
    delete this;
  }

 private:
  // OnCancel and OnWriteDone may both want to end the call; Finish must happen once.
  void End(const grpc::Status& status) {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  ServiceCore& core_;
  v1::RegisterRegionEvent event_;
  std::string id_;
  std::mutex mutex_;
  bool finished_ = false;
};

}  // namespace

grpc::ServerWriteReactor<v1::RegisterRegionEvent>* StartRegisterRegionCall(
    ServiceCore& core, grpc::CallbackServerContext* context, const v1::RegisterRegionRequest* request) {
  return new RegisterRegionCall(core, context, request);
}

}  // namespace gpusort
