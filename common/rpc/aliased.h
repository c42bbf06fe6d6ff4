// Sending a protobuf request without copying its large bytes fields.
//
// gRPC's protobuf serializer copies every byte of a message into its own
// buffers; for a 4 MiB object write that is a copy of the data on every hop.
// AliasedMessage serializes the small fields into buffers and hands the large
// bytes fields (>= 128 bytes, protobuf's aliasing threshold) to gRPC as
// slices that point into the message, each holding a reference to it: the
// message lives until gRPC has dropped the last slice, also when a call is
// cancelled with bytes still queued in the transport. The message must not
// change its bytes fields while any buffer made from it is alive (scalar
// fields may change: they are copied).
//
// UnaryCall sends such a buffer to a method by name ("/weft.pb.Osd/Op") through
// gRPC's generic stub and parses the reply into a generated message.
//
// UnaryService serves methods on gRPC's synchronous server and can send
// their replies the same way: an OSD answering a 4 MiB read hands gRPC the
// read buffer instead of a copy of it.
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/rpc_service_method.h>
#include <grpcpp/impl/service_type.h>
#include <grpcpp/support/method_handler.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "google/protobuf/message_lite.h"

namespace weft::rpc {

grpc::ByteBuffer AliasedMessage(std::shared_ptr<const google::protobuf::MessageLite> message);

// Starts `request` (a buffer from AliasedMessage) to `method`; `done` runs on a
// gRPC thread with the transport status, after `*reply` is parsed. `context`,
// `reply` and `done`'s captures must outlive the call.
void StartUnaryCall(std::shared_ptr<grpc::Channel> channel, grpc::ClientContext* context,
                    const char* method,
                    grpc::ByteBuffer request, google::protobuf::MessageLite* reply,
                    std::function<void(grpc::Status)> done);

// The same, waiting for the answer.
grpc::Status UnaryCall(std::shared_ptr<grpc::Channel> channel, grpc::ClientContext* context,
                       const char* method,
                       grpc::ByteBuffer request, google::protobuf::MessageLite* reply);

// Both, handing back the reply's serialized bytes as received, unparsed (for
// a parser that keeps bulk bytes where they landed: rpc/op_reply.h).
void StartUnaryCall(std::shared_ptr<grpc::Channel> channel, grpc::ClientContext* context,
                    const char* method, grpc::ByteBuffer request, grpc::ByteBuffer* reply,
                    std::function<void(grpc::Status)> done);
grpc::Status UnaryCall(std::shared_ptr<grpc::Channel> channel, grpc::ClientContext* context,
                       const char* method, grpc::ByteBuffer request, grpc::ByteBuffer* reply);

// A reply that gRPC serializes with AliasedMessage. The handler fills
// *get(); gRPC holds the message until it has sent the last aliased byte.
template <class Message>
class SharedReply {
 public:
  // What becomes of a reply once gRPC is done with it: by default it is
  // deleted; a server may take buffers back out of it first (and must then
  // delete it). Set once, before serving.
  using Release = void (*)(Message*);
  static void SetRelease(Release release) { release_.store(release); }

  SharedReply()
      : message_(new Message, [](Message* m) {
          const Release release = release_.load();
          if (release != nullptr) {
            release(m);
          } else {
            delete m;
          }
        }) {}
  Message* get() const { return message_.get(); }
  std::shared_ptr<const Message> shared() const { return message_; }

 private:
  static inline std::atomic<Release> release_{nullptr};
  std::shared_ptr<Message> message_;
};

// A synchronous gRPC service put together method by method, for the services
// whose replies carry bulk data: the generated base class serializes every
// reply by copying it and cannot leave out one method without a generic
// service beside it. Each method is served like a generated one; AddAliased
// sends its replies with AliasedMessage. `method` is the full name
// ("/weft.pb.Osd/Op") and must outlive the server.
class UnaryService : public grpc::Service {
 public:
  template <class Request, class Reply>
  using Handler = std::function<grpc::Status(grpc::ServerContext*, const Request*, Reply*)>;

  template <class Request, class Reply>
  void Add(const char* method, Handler<Request, Reply> handler) {
    AddWith<Request, Reply, Reply>(method, std::move(handler));
  }
  template <class Request, class Reply>
  void AddAliased(const char* method, Handler<Request, Reply> handler) {
    AddWith<Request, Reply, SharedReply<Reply>>(method, std::move(handler));
  }

 private:
  template <class Reply>
  static Reply* Of(Reply* reply) { return reply; }
  template <class Reply>
  static Reply* Of(SharedReply<Reply>* reply) { return reply->get(); }

  template <class Request, class Reply, class Sent>
  void AddWith(const char* method, Handler<Request, Reply> handler) {
    using MethodHandler = grpc::internal::RpcMethodHandler<UnaryService, Request, Sent>;
    AddMethod(new grpc::internal::RpcServiceMethod(
        method, grpc::internal::RpcMethod::NORMAL_RPC,
        new MethodHandler(
            [handler = std::move(handler)](UnaryService*, grpc::ServerContext* context,
                                           const Request* request, Sent* reply) {
              return handler(context, request, Of(reply));
            },
            this)));
  }
};

}  // namespace weft::rpc

// How gRPC turns a SharedReply into bytes and back.
template <class Message>
class grpc::SerializationTraits<weft::rpc::SharedReply<Message>, void> {
 public:
  static grpc::Status Serialize(const weft::rpc::SharedReply<Message>& reply,
                                grpc::ByteBuffer* buffer, bool* own_buffer) {
    grpc::ByteBuffer aliased = weft::rpc::AliasedMessage(reply.shared());
    buffer->Swap(&aliased);
    *own_buffer = true;
    return grpc::Status::OK;
  }
  static grpc::Status Deserialize(grpc::ByteBuffer* buffer,
                                  weft::rpc::SharedReply<Message>* reply) {
    return grpc::SerializationTraits<Message>::Deserialize(buffer, reply->get());
  }
};
