// Random requests to every unary method of the OSD and MDS services: no
// daemon may die of what a client sends. Each request is a message of the
// method's type with random fields (by protobuf reflection), biased towards
// values that reach deep into the handlers: the cluster's real epoch, pool,
// PG seeds, session and root inode, names that are bad in every known way,
// offsets and lengths at the limits. After each request the test checks
// that every daemon still runs; a death fails with the request that caused
// it. Then the cluster must still serve a filesystem and an object pool.
#include <catch2/catch.hpp>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <sys/stat.h>

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/placement/placement.h"
#include "proto/mds_client.grpc.pb.h"
#include "proto/osd.pb.h"
#include "tests/harness/cluster.h"

namespace weft::testing {
namespace {

namespace gp = google::protobuf;
using FD = gp::FieldDescriptor;

// What the random values lean towards: numbers and strings that mean
// something to the cluster under test.
struct Hints {
  std::vector<uint64_t> numbers;
  std::vector<std::string> strings;
};

class RandomFiller {
 public:
  RandomFiller(uint64_t seed, Hints hints) : rng_(seed), hints_(std::move(hints)) {}

  void Fill(gp::Message* m, int depth = 0) {
    const gp::Descriptor* d = m->GetDescriptor();
    // One member of each oneof, sometimes none.
    for (int i = 0; i < d->oneof_decl_count(); ++i) {
      const gp::OneofDescriptor* oneof = d->oneof_decl(i);
      if (Chance(0.1)) continue;
      SetField(m, oneof->field(Below(oneof->field_count())), depth);
    }
    for (int i = 0; i < d->field_count(); ++i) {
      const gp::FieldDescriptor* f = d->field(i);
      if (f->containing_oneof() != nullptr || Chance(0.3)) continue;
      SetField(m, f, depth);
    }
  }

  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  size_t Below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  uint64_t Number() {
    static constexpr uint64_t kEdges[] = {0,          1,          2,          3,
                                          7,          255,        256,        4095,
                                          4096,       65535,      65536,      1u << 20,
                                          4u << 20,   128u << 20, (128u << 20) + 1,
                                          1ull << 31, 1ull << 32, ~0ull,      ~0ull >> 1,
                                          1ull << 63};
    const size_t pick = Below(3);
    if (pick == 0 && !hints_.numbers.empty()) return hints_.numbers[Below(hints_.numbers.size())];
    if (pick == 1) return kEdges[Below(std::size(kEdges))];
    return rng_() >> Below(64);
  }

  // A value for a `string` field (valid UTF-8 unless `bytes`, or now and
  // then, to exercise the parse error) or a `bytes` field.
  std::string String(bool bytes) {
    std::string value = AnyString();
    if (bytes || Chance(0.05)) return value;
    for (char& ch : value) ch = static_cast<char>(ch & 0x7f);
    return value;
  }

  std::string AnyString() {
    switch (Below(9)) {
      case 0: return "";
      case 1: return Below(2) ? "." : "..";
      case 2: return std::string("a\0b", 3);
      case 3: return "a/b";
      case 4: return std::string(256 + Below(2) * 3841, 'n');  // 256 or 4097 bytes
      case 5: return RandomBytes(Below(64), rng_());
      case 6: return RandomBytes(Below(3) == 0 ? 70000 : Below(5000), rng_());
      case 7: {
        static const char* kNames[] = {"user.x", "trusted.y", "security.z",
                                       "system.posix_acl_access", "system.posix_acl_default",
                                       "weft.dir.layout", "weft.file.layout",
                                       "weft.dir.rbytes", "stripe_unit=1M stripe_count=0"};
        return kNames[Below(std::size(kNames))];
      }
      default:
        if (!hints_.strings.empty()) return hints_.strings[Below(hints_.strings.size())];
        return absl::StrCat("f", Below(20));
    }
  }

 private:
  // Sets `f` of `m`, or appends `n` random elements when it is repeated.
  void SetField(gp::Message* m, const gp::FieldDescriptor* f, int depth) {
    const size_t n = f->is_repeated() ? Below(4) : 1;
    for (size_t k = 0; k < n; ++k) PutOne(m, m->GetReflection(), f, depth);
  }

  // A value of type T through the reflection's Add (repeated) or Set.
  template <typename T>
  using Setter = void (gp::Reflection::*)(gp::Message*, const FD*, T) const;
  template <typename T>
  static void Put(gp::Message* m, const gp::Reflection* r, const FD* f, T v, Setter<T> add,
                  Setter<T> set) {
    (r->*(f->is_repeated() ? add : set))(m, f, std::move(v));
  }

  void PutOne(gp::Message* m, const gp::Reflection* r, const FD* f, int depth) {
    using R = gp::Reflection;
    switch (f->cpp_type()) {
      case FD::CPPTYPE_INT32:
        return Put(m, r, f, static_cast<int32_t>(Number()), &R::AddInt32, &R::SetInt32);
      case FD::CPPTYPE_INT64:
        return Put(m, r, f, static_cast<int64_t>(Number()), &R::AddInt64, &R::SetInt64);
      case FD::CPPTYPE_UINT32:
        return Put(m, r, f, static_cast<uint32_t>(Number()), &R::AddUInt32, &R::SetUInt32);
      case FD::CPPTYPE_UINT64: return Put(m, r, f, Number(), &R::AddUInt64, &R::SetUInt64);
      case FD::CPPTYPE_DOUBLE:
        return Put(m, r, f, static_cast<double>(Number()), &R::AddDouble, &R::SetDouble);
      case FD::CPPTYPE_FLOAT:
        return Put(m, r, f, static_cast<float>(Number()), &R::AddFloat, &R::SetFloat);
      case FD::CPPTYPE_BOOL: return Put(m, r, f, Chance(0.5), &R::AddBool, &R::SetBool);
      case FD::CPPTYPE_ENUM:
        return Put(m, r, f, EnumValue(f), &R::AddEnumValue, &R::SetEnumValue);
      case FD::CPPTYPE_STRING:
        return Put(m, r, f, String(IsBytes(f)), &R::AddString, &R::SetString);
      case FD::CPPTYPE_MESSAGE:
        if (depth < 4) Fill(f->is_repeated() ? r->AddMessage(m, f) : r->MutableMessage(m, f),
                            depth + 1);
        return;
    }
  }

  static bool IsBytes(const gp::FieldDescriptor* f) {
    return f->type() == gp::FieldDescriptor::TYPE_BYTES;
  }

  int EnumValue(const gp::FieldDescriptor* f) {
    const gp::EnumDescriptor* e = f->enum_type();
    if (Chance(0.9)) return e->value(Below(e->value_count()))->number();
    return static_cast<int>(Number());  // proto3 enums are open: unknown numbers arrive
  }

  std::mt19937_64 rng_;
  Hints hints_;
};

// One unary call with serialized bytes. Returns how it ended: the gRPC
// code for a transport failure ("grpc 3"), else the reply's status code
// ("ok", "5", "-2"), for the tally of what the handlers answered.
std::string Call(const std::shared_ptr<grpc::Channel>& channel,
                 const gp::MethodDescriptor* method, const std::string& body) {
  const RawReply raw =
      CallRaw(channel, absl::StrCat("/", method->service()->full_name(), "/", method->name()),
              body, absl::Seconds(2));
  if (!raw.status.ok()) return absl::StrCat("grpc ", raw.status.error_code());
  std::unique_ptr<gp::Message> reply(
      gp::MessageFactory::generated_factory()->GetPrototype(method->output_type())->New());
  if (!reply->ParseFromString(raw.body)) return "unparsable";
  const gp::FieldDescriptor* f = reply->GetDescriptor()->FindFieldByName("status");
  if (f == nullptr || f->cpp_type() != FD::CPPTYPE_MESSAGE) return "ok";
  const auto* st =
      dynamic_cast<const pb::Status*>(&reply->GetReflection()->GetMessage(*reply, f));
  if (st == nullptr || st->code() == 0) return "ok";
  return std::to_string(st->code());
}

// The unary methods of `service` ("weft.pb.Osd").
std::vector<const gp::MethodDescriptor*> UnaryMethods(const std::string& service) {
  const gp::ServiceDescriptor* s = gp::DescriptorPool::generated_pool()->FindServiceByName(service);
  REQUIRE(s != nullptr);
  std::vector<const gp::MethodDescriptor*> out;
  for (int i = 0; i < s->method_count(); ++i) {
    const gp::MethodDescriptor* m = s->method(i);
    if (!m->client_streaming() && !m->server_streaming()) out.push_back(m);
  }
  return out;
}

// Sets the top-level uint field `name` of `m` if it has one.
void SetUInt(gp::Message* m, const std::string& name, uint64_t value) {
  const gp::FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(name);
  if (f == nullptr || f->is_repeated()) return;
  const gp::Reflection* r = m->GetReflection();
  if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_UINT64) r->SetUInt64(m, f, value);
  if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_UINT32) {
    r->SetUInt32(m, f, static_cast<uint32_t>(value));
  }
}

uint64_t GetUInt(const gp::Message& m, const std::string& name) {
  const gp::FieldDescriptor* f = m.GetDescriptor()->FindFieldByName(name);
  if (f == nullptr || f->is_repeated()) return 0;
  const gp::Reflection* r = m.GetReflection();
  if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_UINT64) return r->GetUInt64(m, f);
  if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_UINT32) return r->GetUInt32(m, f);
  return 0;
}

std::string Tally(const std::map<std::string, int>& answers) {
  std::string out;
  for (const auto& [answer, n] : answers) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", answer, ": ", n);
  }
  return out;
}

std::string Describe(const gp::Message& m) {
  std::string text = m.ShortDebugString();
  if (text.size() > 2000) text = text.substr(0, 2000) + "...";
  return text;
}

}  // namespace

TEST_CASE("random requests to every OSD and MDS method never kill a daemon", "[cluster]") {
  auto started = Cluster::Start();
  REQUIRE(started.ok());
  Cluster& c = **started;
  REQUIRE(c.CreateFs("fz").ok());
  auto client = c.Client();
  auto data_pool = c.CreatePool(*client, "data", 3, 8);
  REQUIRE(data_pool.ok());
  // An object for the requests to find (its name is among the hints); they
  // may change it as any client could.
  REQUIRE(client->Put(*data_pool, "keep", "original").ok());

  // A session of our own, for requests the MDS would otherwise refuse early.
  const std::string mds_addr = c.mds_addrs()[0];
  auto mds_channel = grpc::CreateChannel(mds_addr, grpc::InsecureChannelCredentials());
  auto open_session = [&]() {
    pb::SessionOpenRequest open;
    open.set_fs("fz");
    open.set_client("rpc-fuzz");
    pb::SessionReply reply;
    std::unique_ptr<pb::Mds::Stub> stub = pb::Mds::NewStub(mds_channel);
    grpc::ClientContext ctx;
    REQUIRE(stub->SessionOpen(&ctx, open, &reply).ok());
    REQUIRE(reply.status().code() == 0);
    return reply;
  };
  pb::SessionReply session = open_session();

  auto map = client->map();
  const PoolInfo* pool = map->FindPool(*data_pool);
  REQUIRE(pool != nullptr);
  Hints hints;
  hints.numbers = {map->epoch, map->epoch + 1, data_pool->value(), session.session(),
                   session.root(), session.root() + 1, session.fs_id(), 1000};
  for (uint32_t seed = 0; seed < pool->pg_num; ++seed) hints.numbers.push_back(seed);
  hints.strings = {"keep", "fz", "rpc-fuzz", "d", "f1"};

  auto all_running = [&]() {
    if (!c.MdsRunning()) return std::string("the MDS");
    for (int i = 0; i < 3; ++i) {
      if (!c.OsdRunning(i)) return absl::StrCat("osd.", c.osd_id(i));
    }
    return std::string();
  };

  std::vector<std::shared_ptr<grpc::Channel>> osd_channels;
  for (int i = 0; i < 3; ++i) {
    const OsdInfo* info = map->FindOsd(OsdId(c.osd_id(i)));
    REQUIRE(info != nullptr);
    osd_channels.push_back(grpc::CreateChannel(info->addr, grpc::InsecureChannelCredentials()));
  }
  constexpr int kRequestsPerMethod = 150;
  RandomFiller fill(20261124, hints);
  // kRequestsPerMethod random requests to `method`, each steered by `steer`,
  // which returns the channel to send it on and a name for the target.
  using Steer = std::function<std::pair<std::shared_ptr<grpc::Channel>, std::string>(
      gp::Message*)>;
  auto fuzz = [&](const gp::MethodDescriptor* method, const Steer& steer) {
    const absl::Time start = absl::Now();
    std::map<std::string, int> answers;
    for (int n = 0; n < kRequestsPerMethod; ++n) {
      std::unique_ptr<gp::Message> req(
          gp::MessageFactory::generated_factory()->GetPrototype(method->input_type())->New());
      fill.Fill(req.get());
      const auto [channel, target] = steer(req.get());
      ++answers[Call(channel, method, req->SerializeAsString())];
      const std::string dead = all_running();
      INFO(method->full_name() << " to " << target << ": " << Describe(*req));
      REQUIRE(dead.empty());
    }
    WARN(method->full_name() << ": " << kRequestsPerMethod << " requests in "
                             << absl::FormatDuration(absl::Now() - start) << ", answers "
                             << Tally(answers));
    REQUIRE(answers.count("unparsable") == 0);  // every reply a daemon sends must parse
  };

  // Every unary method of the Osd and Mds services. The Cluster and
  // Filesystems services (pools, OSDs in or out, new filesystems) change the
  // cluster on purpose: left to the admin tests.
  for (const auto* method : UnaryMethods("weft.pb.Osd")) {
    fuzz(method, [&](gp::Message* req) {
      size_t target = fill.Below(osd_channels.size());
      // Mostly the current epoch and a PG of the object pool, sent to its
      // primary, so that the ops reach the handlers. Otherwise random: an
      // old epoch is answered at once, a future one waits 3 s for the map.
      if (fill.Chance(0.85)) {
        SetUInt(req, "map_epoch", map->epoch);
        SetUInt(req, "pool", data_pool->value());
        SetUInt(req, "pg_seed", fill.Below(pool->pg_num));
        const uint32_t seed = static_cast<uint32_t>(GetUInt(*req, "pg_seed"));
        const OsdId primary = placement::MapPg(*map, *pool, seed).primary;
        for (size_t i = 0; i < osd_channels.size(); ++i) {
          if (OsdId(c.osd_id(static_cast<int>(i))) == primary && fill.Chance(0.8)) target = i;
        }
      } else if (fill.Chance(0.8)) {
        SetUInt(req, "map_epoch", fill.Below(map->epoch + 1));
      }
      // Ops name an object: mostly the PG that name maps to.
      if (auto* op = dynamic_cast<pb::OpRequest*>(req); op != nullptr && fill.Chance(0.8)) {
        op->set_pg_seed(placement::ObjectToPgSeed(op->oid(), pool->pg_num));
        const OsdId primary = placement::MapPg(*map, *pool, op->pg_seed()).primary;
        for (size_t i = 0; i < osd_channels.size(); ++i) {
          if (OsdId(c.osd_id(static_cast<int>(i))) == primary) target = i;
        }
      }
      return std::make_pair(osd_channels[target],
                            absl::StrCat("osd.", c.osd_id(static_cast<int>(target))));
    });
  }
  uint64_t tid = 1;
  for (const auto* method : UnaryMethods("weft.pb.Mds")) {
    session = open_session();  // the fuzzed SessionClose may have ended the last one
    fuzz(method, [&](gp::Message* req) {
      if (auto* meta = dynamic_cast<pb::MetaRequest*>(req); meta != nullptr) {
        // Mostly from the live session, as root or a user, with fresh ids:
        // the op itself is what reaches the handlers.
        if (fill.Chance(0.8)) {
          meta->set_session(session.session());
          meta->set_tid(tid++);
          meta->set_replay_seq(0);
          if (fill.Chance(0.5)) {
            meta->mutable_creds()->set_uid(0);
            meta->mutable_creds()->set_gid(0);
          }
        }
      }
      return std::make_pair(mds_channel, std::string("the MDS"));
    });
  }

  // Still serving: the filesystem (a new session makes a directory) and the
  // object pool.
  auto meta = c.Meta("fz");
  REQUIRE(meta != nullptr);
  pb::MetaRequest mkdir;
  mkdir.mutable_mkdir()->set_parent(meta->root());
  mkdir.mutable_mkdir()->set_name("after-the-fuzz");
  mkdir.mutable_mkdir()->set_mode(S_IFDIR | 0755);
  auto made = meta->Call(std::move(mkdir));
  INFO(made.status());
  REQUIRE(made.ok());
  REQUIRE(made->status().code() == 0);
  auto after_pool = c.CreatePool(*client, "after", 3, 8);
  INFO(after_pool.status());
  REQUIRE(after_pool.ok());
  REQUIRE(client->Put(*after_pool, "new", "written after the fuzz").ok());
  auto back = client->Get(*after_pool, "new");
  REQUIRE(back.ok());
  REQUIRE(*back == "written after the fuzz");
}

}  // namespace weft::testing
