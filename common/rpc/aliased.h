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
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

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

}  // namespace weft::rpc
