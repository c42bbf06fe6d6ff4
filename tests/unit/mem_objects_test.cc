// MemObjects keeps the contract of common/objects/objects.h, as the OSDs do.
#include "common/objects/mem_objects.h"

#include <catch2/catch.hpp>

#include "common/objects/striped_io.h"
#include "common/striping/striping.h"

namespace weft::objects {
namespace {

const PoolId kPool(3);

TEST_CASE("mem objects: writes - reads - holes and sizes as an OSD answers them") {
  MemObjects store;
  auto c = store.Client("client.a");
  CHECK(absl::IsNotFound(c->Get(kPool, "x").status()));
  REQUIRE(c->Put(kPool, "x", "hello").ok());
  CHECK(*c->Get(kPool, "x") == "hello");
  ObjectOperation w;
  w.Write(8, "world");
  auto r = c->Execute(kPool, "x", std::move(w));
  REQUIRE(r.ok());
  CHECK(r->size_before == 5);
  CHECK(r->size_after == 13);
  CHECK(*c->Get(kPool, "x") == std::string("hello\0\0\0world", 13));
  ObjectOperation past;
  past.Read(100, 10);
  auto empty = c->Execute(kPool, "x", std::move(past));
  REQUIRE(empty.ok());
  CHECK(empty->items.at(0).data.empty());
  ObjectOperation append;
  append.Append("!");
  REQUIRE(c->Execute(kPool, "x", std::move(append)).ok());
  CHECK(c->Stat(kPool, "x")->size == 14);
  ObjectOperation cut;
  cut.Truncate(2);
  REQUIRE(c->Execute(kPool, "x", std::move(cut)).ok());
  CHECK(*c->Get(kPool, "x") == "he");
  REQUIRE(c->Remove(kPool, "x").ok());
  CHECK(absl::IsNotFound(c->Remove(kPool, "x")));
  CHECK(absl::IsNotFound(c->Stat(kPool, "x").status()));
}

TEST_CASE("mem objects: a request applies whole or not at all") {
  MemObjects store;
  auto c = store.Client("client.a");
  REQUIRE(c->Put(kPool, "x", "abc").ok());
  ObjectOperation op;
  op.Write(0, "zzz");
  op.Create(/*exclusive=*/true);  // fails: the object exists
  CHECK(absl::IsAlreadyExists(c->Execute(kPool, "x", std::move(op)).status()));
  CHECK(*c->Get(kPool, "x") == "abc");
  ObjectOperation mixed;
  mixed.Write(0, "a");
  mixed.Stat();
  CHECK(absl::IsInvalidArgument(c->Execute(kPool, "x", std::move(mixed)).status()));
  CHECK(absl::IsInvalidArgument(c->Execute(kPool, "", ObjectOperation().Stat()).status()));
  CHECK(absl::IsNotFound(c->Execute(kPool, "gone", ObjectOperation().OmapClear()).status()));
  CHECK(store.Names(kPool) == std::vector<std::string>{"x"});
}

TEST_CASE("mem objects: omap lists pages after a key - by prefix") {
  MemObjects store;
  auto c = store.Client("client.a");
  ObjectOperation set;
  set.OmapSet({{"a1", "1"}, {"a2", "2"}, {"b1", "3"}, {"b2", "4"}, {"c", "5"}});
  REQUIRE(c->Execute(kPool, "o", std::move(set)).ok());
  ObjectOperation list;
  list.OmapList("", "b", 1);
  auto first = c->Execute(kPool, "o", std::move(list));
  REQUIRE(first.ok());
  REQUIRE(first->items.at(0).kvs.size() == 1);
  CHECK(first->items.at(0).kvs[0].first == "b1");
  CHECK(first->items.at(0).more);
  ObjectOperation next;
  next.OmapList("b1", "b", 10);
  auto second = c->Execute(kPool, "o", std::move(next));
  REQUIRE(second.ok());
  REQUIRE(second->items.at(0).kvs.size() == 1);
  CHECK(second->items.at(0).kvs[0].first == "b2");
  CHECK_FALSE(second->items.at(0).more);
  ObjectOperation get;
  get.OmapGet({"a2", "zz"});
  auto got = c->Execute(kPool, "o", std::move(get));
  REQUIRE(got.ok());
  REQUIRE(got->items.at(0).kvs.size() == 1);
  CHECK(got->items.at(0).kvs[0].second == "2");
  ObjectOperation rm;
  rm.OmapRm({"a1", "a2"});
  REQUIRE(c->Execute(kPool, "o", std::move(rm)).ok());
  CHECK(store.Find(kPool, "o")->omap.size() == 3);
}

TEST_CASE("mem objects: a blocklisted client and a refusing hook change nothing") {
  MemObjects store;
  auto a = store.Client("mds.1");
  auto b = store.Client("mds.2");
  REQUIRE(a->Put(kPool, "j", "1").ok());
  store.Blocklist("mds.1");
  CHECK(absl::IsPermissionDenied(a->Put(kPool, "j", "2")));
  CHECK(absl::IsPermissionDenied(a->Get(kPool, "j").status()));
  CHECK(*b->Get(kPool, "j") == "1");
  int seen = 0;
  store.SetHook([&](const MemObjects::Request& r) {
    ++seen;
    return r.mutating ? absl::UnavailableError("full") : absl::OkStatus();
  });
  CHECK(absl::IsUnavailable(b->Put(kPool, "j", "3")));
  CHECK(*b->Get(kPool, "j") == "1");
  CHECK(seen == 2);
}

TEST_CASE("mem objects: striped I/O on one thread lists and cuts a sparse file") {
  MemObjects store;
  auto c = store.Client("client.a");
  StripedIo io(c.get(), 1 << 20, /*threads_max=*/1);
  FileData file;
  file.ino = 0x1234;
  file.layout.stripe_unit = 4096;
  file.layout.stripe_count = 2;
  file.layout.object_size = 8192;
  file.pool = kPool;
  REQUIRE(io.Write(file, 0, std::string(40000, 'a')).ok());
  CHECK(store.Names(kPool, striping::DataObjectPrefix(0x1234)).size() == 6);
  auto back = io.Read(file, 0, 40000);
  REQUIRE(back.ok());
  CHECK(*back == std::string(40000, 'a'));
  REQUIRE(io.Trim(file, 40000, 5000).ok());
  auto cut = io.Read(file, 0, 40000);
  REQUIRE(cut.ok());
  CHECK(cut->substr(0, 5000) == std::string(5000, 'a'));
  CHECK(cut->substr(5000) == std::string(35000, '\0'));
}

}  // namespace
}  // namespace weft::objects
