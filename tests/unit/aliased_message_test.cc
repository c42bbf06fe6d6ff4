// common/rpc/aliased.h: a request serialized with its large bytes fields as
// slices that point into it parses back to the same message, does not copy
// those bytes, and keeps the message alive for as long as a slice is held.
#include "common/rpc/aliased.h"

#include <catch2/catch.hpp>
#include <grpcpp/support/proto_buffer_reader.h>

#include <string>
#include <vector>

#include "proto/osd.pb.h"

namespace weft::rpc {
namespace {

std::string Bytes(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 7);
  return s;
}

pb::OpRequest Parse(grpc::ByteBuffer* buffer) {
  grpc::ProtoBufferReader reader(buffer);
  pb::OpRequest out;
  REQUIRE(out.ParseFromZeroCopyStream(&reader));
  return out;
}

}  // namespace

TEST_CASE("aliased message: parses back equal - large fields are not copied", "[rpc]") {
  auto req = std::make_shared<pb::OpRequest>();
  req->set_pool(3);
  req->set_oid("some/object");
  req->set_map_epoch(77);
  for (size_t size : {0, 1, 127, 128, 5000, 1 << 20, (4 << 20) + 3}) {
    pb::ObjectOp* op = req->add_ops();
    op->set_type(pb::WRITE);
    op->set_offset(size);
    op->set_data(Bytes(size, static_cast<char>(size)));
    op->set_name("x");
  }
  grpc::ByteBuffer buffer = AliasedMessage(req);
  CHECK(buffer.Length() == req->ByteSizeLong());
  pb::OpRequest back = Parse(&buffer);
  CHECK(back.SerializeAsString() == req->SerializeAsString());

  // The two big payloads travel as slices that start inside the message's
  // own strings.
  std::vector<grpc::Slice> slices;
  REQUIRE(buffer.Dump(&slices).ok());
  int aliased = 0;
  for (const grpc::Slice& s : slices) {
    for (const pb::ObjectOp& op : req->ops()) {
      if (op.data().size() >= (1 << 20) && s.begin() == reinterpret_cast<const uint8_t*>(op.data().data())) {
        ++aliased;
      }
    }
  }
  CHECK(aliased == 2);
}

TEST_CASE("aliased message: the buffer keeps the message alive", "[rpc]") {
  std::weak_ptr<pb::OpRequest> watch;
  grpc::ByteBuffer buffer;
  {
    auto req = std::make_shared<pb::OpRequest>();
    req->set_oid("o");
    req->add_ops()->set_data(Bytes(300000, 'a'));
    watch = req;
    buffer = AliasedMessage(req);
  }
  REQUIRE_FALSE(watch.expired());  // only the buffer's slices hold it now
  pb::OpRequest back = Parse(&buffer);
  CHECK(back.ops(0).data() == Bytes(300000, 'a'));
  grpc::ByteBuffer copy = buffer;  // shares the slices
  buffer.Clear();
  CHECK_FALSE(watch.expired());
  copy.Clear();
  CHECK(watch.expired());
}

}  // namespace weft::rpc
