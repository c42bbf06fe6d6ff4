#include "common/rpc/aliased.h"

#include <grpcpp/support/proto_buffer_reader.h>

#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream.h"

namespace weft::rpc {
namespace {

using Keep = std::shared_ptr<const google::protobuf::MessageLite>;

void DropKeep(void* keep) { delete static_cast<Keep*>(keep); }

// Collects the serialized message as slices: owned blocks for what protobuf
// writes, aliased slices for what it hands over (WriteAliasedRaw).
class SliceStream final : public google::protobuf::io::ZeroCopyOutputStream {
 public:
  explicit SliceStream(Keep keep) : keep_(std::move(keep)) {}

  bool Next(void** data, int* size) override {
    CloseBlock();
    block_ = grpc_slice_malloc(kBlockBytes);
    block_open_ = true;
    *data = GRPC_SLICE_START_PTR(block_);
    *size = kBlockBytes;
    block_used_ = kBlockBytes;
    total_ += kBlockBytes;
    return true;
  }
  void BackUp(int count) override {
    block_used_ -= count;
    total_ -= count;
  }
  int64_t ByteCount() const override { return total_; }
  bool AllowsAliasing() const override { return true; }
  bool WriteAliasedRaw(const void* data, int size) override {
    CloseBlock();
    slices_.emplace_back(const_cast<void*>(data), static_cast<size_t>(size), DropKeep,
                         new Keep(keep_));
    total_ += size;
    return true;
  }

  grpc::ByteBuffer Finish() {
    CloseBlock();
    return grpc::ByteBuffer(slices_.data(), slices_.size());
  }

 private:
  static constexpr int kBlockBytes = 8192;

  void CloseBlock() {
    if (!block_open_) return;
    block_open_ = false;
    if (block_used_ == 0) {
      grpc_slice_unref(block_);
      return;
    }
    grpc_slice used = grpc_slice_sub(block_, 0, block_used_);  // its own reference
    grpc_slice_unref(block_);
    slices_.emplace_back(used, grpc::Slice::STEAL_REF);
  }

  Keep keep_;
  std::vector<grpc::Slice> slices_;
  grpc_slice block_;
  bool block_open_ = false;
  size_t block_used_ = 0;
  int64_t total_ = 0;
};

}  // namespace

grpc::ByteBuffer AliasedMessage(std::shared_ptr<const google::protobuf::MessageLite> message) {
  message->ByteSizeLong();  // caches the sizes SerializeWithCachedSizes writes
  SliceStream stream(message);
  {
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.EnableAliasing(true);
    message->SerializeWithCachedSizes(&coded);
  }
  return stream.Finish();
}

void StartUnaryCall(std::shared_ptr<grpc::Channel> channel, grpc::ClientContext* context,
                    const char* method, grpc::ByteBuffer request, grpc::ByteBuffer* reply,
                    std::function<void(grpc::Status)> done) {
  // Everything the call points into lives until it completes (the callback
  // holds it), the method name too: the stub hands gRPC its c_str().
  struct Call {
    std::string method;
    grpc::ByteBuffer request;
  };
  auto call = std::make_shared<Call>();
  call->method = method;
  call->request = std::move(request);
  grpc::GenericStub(std::move(channel))
      .UnaryCall(context, call->method, grpc::StubOptions(), &call->request, reply,
                 [call, done = std::move(done)](grpc::Status status) {
                   call->request.Clear();
                   done(std::move(status));
                 });
}

void StartUnaryCall(std::shared_ptr<grpc::Channel> channel, grpc::ClientContext* context,
                    const char* method, grpc::ByteBuffer request,
                    google::protobuf::MessageLite* reply, std::function<void(grpc::Status)> done) {
  auto response = std::make_shared<grpc::ByteBuffer>();
  StartUnaryCall(std::move(channel), context, method, std::move(request), response.get(),
                 [response, reply, done = std::move(done)](grpc::Status status) {
                   if (status.ok()) {
                     grpc::ProtoBufferReader reader(response.get());
                     if (!reply->ParseFromZeroCopyStream(&reader)) {
                       status = grpc::Status(grpc::StatusCode::INTERNAL, "unparsable reply");
                     }
                   }
                   response->Clear();
                   done(std::move(status));
                 });
}

template <class Reply>
grpc::Status WaitUnaryCall(std::shared_ptr<grpc::Channel> channel, grpc::ClientContext* context,
                           const char* method, grpc::ByteBuffer request, Reply* reply) {
  absl::Notification finished;
  grpc::Status out;
  StartUnaryCall(std::move(channel), context, method, std::move(request), reply,
                 [&](grpc::Status status) {
                   out = std::move(status);
                   finished.Notify();
                 });
  finished.WaitForNotification();
  return out;
}

grpc::Status UnaryCall(std::shared_ptr<grpc::Channel> channel, grpc::ClientContext* context,
                       const char* method, grpc::ByteBuffer request,
                       google::protobuf::MessageLite* reply) {
  return WaitUnaryCall(std::move(channel), context, method, std::move(request), reply);
}

grpc::Status UnaryCall(std::shared_ptr<grpc::Channel> channel, grpc::ClientContext* context,
                       const char* method, grpc::ByteBuffer request, grpc::ByteBuffer* reply) {
  return WaitUnaryCall(std::move(channel), context, method, std::move(request), reply);
}

}  // namespace weft::rpc
