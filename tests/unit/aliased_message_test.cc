// common/rpc/aliased.h: a request serialized with its large bytes fields as
// slices that point into it parses back to the same message, does not copy
// those bytes, and keeps the message alive for as long as a slice is held;
// a UnaryService answers generated stubs, with aliased replies or not.
#include "common/rpc/aliased.h"

#include <catch2/catch.hpp>
#include <grpcpp/support/proto_buffer_reader.h>

#include <string>
#include <vector>

#include "proto/osd.grpc.pb.h"

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

TEST_CASE("aliased reply: the data goes out as slices of the reply", "[rpc]") {
  SharedReply<pb::OpReply> reply;
  reply.get()->add_results()->set_data(Bytes(1 << 20, 'r'));
  grpc::ByteBuffer buffer;
  bool own = false;
  REQUIRE(grpc::SerializationTraits<SharedReply<pb::OpReply>>::Serialize(reply, &buffer, &own)
              .ok());
  CHECK(own);
  std::vector<grpc::Slice> slices;
  REQUIRE(buffer.Dump(&slices).ok());
  const auto* data = reinterpret_cast<const uint8_t*>(reply.get()->results(0).data().data());
  int aliased = 0;
  for (const grpc::Slice& s : slices) aliased += s.begin() == data;
  CHECK(aliased == 1);

  SharedReply<pb::OpReply> back;
  REQUIRE(grpc::SerializationTraits<SharedReply<pb::OpReply>>::Deserialize(&buffer, &back).ok());
  CHECK(back.get()->results(0).data() == reply.get()->results(0).data());
}

TEST_CASE("unary service: generated stubs call plain and aliased methods", "[rpc]") {
  UnaryService service;
  service.AddAliased<pb::OpRequest, pb::OpReply>(
      "/weft.pb.Osd/Op", [](grpc::ServerContext*, const pb::OpRequest* req, pb::OpReply* reply) {
        // Echo each write's data back, as a read would return it.
        for (const pb::ObjectOp& op : req->ops()) reply->add_results()->set_data(op.data());
        reply->set_map_epoch(req->map_epoch() + 1);
        return grpc::Status::OK;
      });
  service.Add<pb::GetMapRequest, pb::GetMapReply>(
      "/weft.pb.Osd/GetMap",
      [](grpc::ServerContext*, const pb::GetMapRequest* req, pb::GetMapReply* reply) {
        if (req->have_epoch() == 0) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "0");
        reply->set_osdmap(std::to_string(req->have_epoch()));
        return grpc::Status::OK;
      });
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(64 << 20);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  REQUIRE(server != nullptr);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto stub = pb::Osd::NewStub(grpc::CreateCustomChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args));

  pb::OpRequest req;
  req.set_map_epoch(41);
  for (size_t size : {0, 5, 200, (4 << 20) + 1}) req.add_ops()->set_data(Bytes(size, 'q'));
  for (int round = 0; round < 3; ++round) {  // replies of earlier calls are gone by now
    grpc::ClientContext ctx;
    pb::OpReply reply;
    REQUIRE(stub->Op(&ctx, req, &reply).ok());
    CHECK(reply.map_epoch() == 42);
    REQUIRE(reply.results_size() == req.ops_size());
    for (int i = 0; i < req.ops_size(); ++i) CHECK(reply.results(i).data() == req.ops(i).data());
  }
  {
    grpc::ClientContext ctx;
    pb::GetMapRequest map_req;
    map_req.set_have_epoch(7);
    pb::GetMapReply map_reply;
    REQUIRE(stub->GetMap(&ctx, map_req, &map_reply).ok());
    CHECK(map_reply.osdmap() == "7");
  }
  {
    grpc::ClientContext ctx;
    pb::GetMapReply map_reply;
    grpc::Status status = stub->GetMap(&ctx, pb::GetMapRequest(), &map_reply);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  }
  {
    grpc::ClientContext ctx;  // a method of the service that was not added
    pb::PgListReply list_reply;
    CHECK(stub->PgList(&ctx, pb::PgListRequest(), &list_reply).error_code() ==
          grpc::StatusCode::UNIMPLEMENTED);
  }
  server->Shutdown();
}

}  // namespace weft::rpc
