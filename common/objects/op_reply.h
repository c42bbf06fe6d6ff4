// Parsing an OSD's OpReply without copying the bytes it carries.
//
// protobuf parses a bytes field by copying it out of gRPC's receive buffer
// into a std::string: for a client reading 4 MiB objects that copy is about a
// tenth of the machine's CPU (docs/ARCHITECTURE.md, Copies on the read path).
// ParseOpReply walks the reply's wire format itself and leaves every result's
// `data` in the received slices, as a ByteChain; everything else is parsed by
// protobuf as usual.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <vector>

#include "absl/status/status.h"
#include "common/bytes/byte_chain.h"
#include "proto/osd.pb.h"

namespace weft::objects {

// Parses the serialized OpReply in `buffer` into `reply`, except that each
// result's data goes to (*data)[i] (the result's own `data` field is left
// empty): data->size() == reply->results_size() on success. Pieces of at
// least kSharedDataBytes share `buffer`'s slices; smaller ones are copied.
// Accepts exactly what protobuf's own parser accepts, but for groups (which
// no Weft message has); an error otherwise.
absl::Status ParseOpReply(const grpc::ByteBuffer& buffer, pb::OpReply* reply,
                          std::vector<ByteChain>* data);

inline constexpr size_t kSharedDataBytes = 4096;

}  // namespace weft::objects
