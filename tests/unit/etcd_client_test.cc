// weft::etcd::Client against a real etcd (tests/harness/etcd_process.h). Every
// test case starts its own etcd in its own temporary directory; both are torn
// down by destructors, also when a REQUIRE fails.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/etcd/etcd_client.h"
#include "tests/harness/etcd_process.h"

namespace weft::etcd {
namespace {

using weft::testing::EtcdProcess;

class TempDir {
 public:
  TempDir() {
    std::string templ =
        (std::filesystem::temp_directory_path() / "weft-etcd-test-XXXXXX").string();
    REQUIRE(mkdtemp(templ.data()) != nullptr);
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// One etcd and one client per test case.
struct EtcdFixture {
  EtcdFixture() {
    auto started = EtcdProcess::Start(dir.path());
    REQUIRE(started.ok());
    etcd = std::move(started).value();
    auto connected = Client::Connect({etcd->Endpoint()}, absl::Seconds(5));
    REQUIRE(connected.ok());
    client = std::move(connected).value();
  }

  // Declared in teardown-reverse order: the client goes before etcd, etcd before its dir.
  TempDir dir;
  std::unique_ptr<EtcdProcess> etcd;
  std::unique_ptr<Client> client;
};

// Collects what a Watch delivers, for the test thread to wait on.
class WatchLog {
 public:
  void OnEvents(const std::vector<WatchEvent>& events) {
    absl::MutexLock lock(&mu_);
    ++calls_;
    events_.insert(events_.end(), events.begin(), events.end());
  }
  void OnError(const absl::Status& status) {
    absl::MutexLock lock(&mu_);
    errors_.push_back(status);
  }
  // True once at least `n` events arrived, false after `timeout`.
  bool WaitForEvents(size_t n, absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return events_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }
  bool WaitForError(absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto any = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !errors_.empty(); };
    return mu_.AwaitWithTimeout(absl::Condition(&any), timeout);
  }
  std::vector<WatchEvent> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  std::vector<absl::Status> errors() {
    absl::MutexLock lock(&mu_);
    return errors_;
  }
  int calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  absl::Mutex mu_;
  std::vector<WatchEvent> events_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Status> errors_ ABSL_GUARDED_BY(mu_);
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
};

std::unique_ptr<Watch> WatchInto(Client& client, WatchLog& log, absl::string_view key,
                                 absl::string_view range_end, int64_t start_revision) {
  return client.WatchRange(
      key, range_end, start_revision,
      [&log](const std::vector<WatchEvent>& events) { log.OnEvents(events); },
      [&log](const absl::Status& status) { log.OnError(status); });
}

// Polls `cond` every 50 ms until it holds or `timeout` passes.
template <typename Cond>
bool Eventually(Cond cond, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (cond()) return true;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return cond();
}

bool KeyExists(Client& client, absl::string_view key) {
  auto r = client.Get(key);
  REQUIRE(r.ok());
  return !r->kvs.empty();
}

// A 127.0.0.1 port nothing listens on (bound to 0, then closed).
int UnusedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST_CASE("PrefixEnd increments the last byte below 0xff", "[etcd]") {
  CHECK(PrefixEnd("/a/") == "/a0");
  CHECK(PrefixEnd("a\xff") == "b");
  CHECK(PrefixEnd("") == std::string(1, '\0'));
  CHECK(PrefixEnd("\xff\xff") == std::string(1, '\0'));
}

TEST_CASE_METHOD(EtcdFixture, "put - get - prefix and delete", "[etcd]") {
  Client& c = *client;
  auto r1 = c.Put("/t/a", "1");
  REQUIRE(r1.ok());
  auto got = c.Get("/t/a");
  REQUIRE(got.ok());
  REQUIRE(got->kvs.size() == 1);
  CHECK(got->kvs[0].value == "1");
  CHECK(got->kvs[0].version == 1);
  CHECK(got->kvs[0].create_revision == *r1);
  CHECK(got->revision == *r1);

  auto r2 = c.Put("/t/a", "2");
  REQUIRE(r2.ok());
  CHECK(*r2 == *r1 + 1);
  got = c.Get("/t/a");
  REQUIRE(got.ok());
  CHECK(got->kvs[0].version == 2);
  CHECK(got->kvs[0].mod_revision == *r2);
  CHECK(got->kvs[0].create_revision == *r1);

  // A read at an older revision sees the older value.
  auto old = c.Range("/t/a", "", 0, *r1);
  REQUIRE(old.ok());
  REQUIRE(old->kvs.size() == 1);
  CHECK(old->kvs[0].value == "1");

  REQUIRE(c.Put("/t/c", "3").ok());
  REQUIRE(c.Put("/t/b", "4").ok());
  REQUIRE(c.Put("/u/x", "5").ok());
  auto prefix = c.GetPrefix("/t/");
  REQUIRE(prefix.ok());
  REQUIRE(prefix->kvs.size() == 3);
  CHECK(prefix->kvs[0].key == "/t/a");
  CHECK(prefix->kvs[1].key == "/t/b");
  CHECK(prefix->kvs[2].key == "/t/c");
  CHECK(prefix->count == 3);
  CHECK_FALSE(prefix->more);

  auto limited = c.GetPrefix("/t/", 2);
  REQUIRE(limited.ok());
  CHECK(limited->kvs.size() == 2);
  CHECK(limited->more);
  CHECK(limited->count == 3);

  auto absent = c.Get("/nope");
  REQUIRE(absent.ok());
  CHECK(absent->kvs.empty());

  auto deleted = c.Delete("/t/a");
  REQUIRE(deleted.ok());
  CHECK(*deleted == 1);
  deleted = c.Delete("/t/a");
  REQUIRE(deleted.ok());
  CHECK(*deleted == 0);
  deleted = c.DeletePrefix("/t/");
  REQUIRE(deleted.ok());
  CHECK(*deleted == 2);
  CHECK(c.GetPrefix("/t/")->kvs.empty());
  CHECK(KeyExists(c, "/u/x"));

  // etcd rejects an empty key; the error names the operation.
  auto empty = c.Put("", "x");
  CHECK(absl::IsInvalidArgument(empty.status()));
  CHECK(absl::StrContains(empty.status().message(), "etcd Put"));
}

TEST_CASE_METHOD(EtcdFixture, "txn takes the success or failure branch", "[etcd]") {
  Client& c = *client;
  const std::string key = "/weft/fs1/leader";
  auto campaign = [&](const std::string& me) {
    return c.Txn({Compare::CreateRevision(key, Compare::kEqual, 0)}, {Op::Put(key, me)},
                 {Op::Get(key)});
  };

  auto first = campaign("mds.a");
  REQUIRE(first.ok());
  CHECK(first->succeeded);
  CHECK(first->ranges.empty());  // The success branch had no Get.

  auto second = campaign("mds.b");
  REQUIRE(second.ok());
  CHECK_FALSE(second->succeeded);
  REQUIRE(second->ranges.size() == 1);
  REQUIRE(second->ranges[0].kvs.size() == 1);
  CHECK(second->ranges[0].kvs[0].value == "mds.a");
  CHECK(second->revision == first->revision);  // A failed compare writes nothing.

  // Resign only if still the holder, by value and by mod revision.
  const int64_t mod = second->ranges[0].kvs[0].mod_revision;
  auto stale = c.Txn({Compare::ModRevision(key, Compare::kNotEqual, mod)}, {Op::Delete(key)}, {});
  REQUIRE(stale.ok());
  CHECK_FALSE(stale->succeeded);
  auto resign = c.Txn({Compare::Value(key, Compare::kEqual, "mds.a"),
                       Compare::Version(key, Compare::kGreater, 0)},
                      {Op::Delete(key), Op::Get(key), Op::GetPrefix("/weft/fs1/")}, {});
  REQUIRE(resign.ok());
  CHECK(resign->succeeded);
  REQUIRE(resign->ranges.size() == 2);
  CHECK(resign->ranges[0].kvs.empty());
  CHECK(resign->ranges[1].kvs.empty());

  // Lease comparison, and several puts at one revision.
  auto lease = c.LeaseGrant(10);
  REQUIRE(lease.ok());
  auto with_lease = c.Txn({Compare::Lease(key, Compare::kEqual, 0)},
                          {Op::Put(key, "mds.c", *lease), Op::Put("/weft/fs1/x", "y")}, {});
  REQUIRE(with_lease.ok());
  CHECK(with_lease->succeeded);
  auto got = c.GetPrefix("/weft/fs1/");
  REQUIRE(got.ok());
  REQUIRE(got->kvs.size() == 2);
  CHECK(got->kvs[0].lease == *lease);
  CHECK(got->kvs[0].mod_revision == got->kvs[1].mod_revision);
  auto by_lease = c.Txn({Compare::Lease(key, Compare::kEqual, *lease)}, {}, {});
  REQUIRE(by_lease.ok());
  CHECK(by_lease->succeeded);
}

TEST_CASE_METHOD(EtcdFixture, "revoking a lease deletes its keys", "[etcd]") {
  Client& c = *client;
  auto lease = c.LeaseGrant(30);
  REQUIRE(lease.ok());
  CHECK(*lease != 0);
  REQUIRE(c.Put("/alive/osd.1", "up", *lease).ok());
  auto got = c.Get("/alive/osd.1");
  REQUIRE(got.ok());
  REQUIRE(got->kvs.size() == 1);
  CHECK(got->kvs[0].lease == *lease);
  auto ttl = c.LeaseTimeToLive(*lease);
  REQUIRE(ttl.ok());
  CHECK(*ttl > 0);
  CHECK(*ttl <= 30);
  auto renewed = c.LeaseKeepAliveOnce(*lease);
  REQUIRE(renewed.ok());
  CHECK(*renewed == 30);

  REQUIRE(c.LeaseRevoke(*lease).ok());
  CHECK_FALSE(KeyExists(c, "/alive/osd.1"));
  CHECK(absl::IsNotFound(c.LeaseKeepAliveOnce(*lease).status()));
  CHECK(absl::IsNotFound(c.LeaseTimeToLive(*lease).status()));
  CHECK(absl::IsNotFound(c.LeaseRevoke(*lease)));
}

TEST_CASE_METHOD(EtcdFixture, "a lease expires unless kept alive", "[etcd]") {
  Client& c = *client;
  const absl::Time start = absl::Now();
  auto idle = c.LeaseGrant(1);
  auto kept = c.LeaseGrant(2);  // Renewed every ~0.7 s: margin for a loaded machine.
  REQUIRE(idle.ok());
  REQUIRE(kept.ok());
  REQUIRE(c.Put("/alive/idle", "x", *idle).ok());
  REQUIRE(c.Put("/alive/kept", "x", *kept).ok());
  std::atomic<int> lost{0};
  auto keeper = c.KeepAlive(*kept, 2, [&lost] { ++lost; });
  CHECK(keeper->lease() == *kept);

  CHECK(Eventually([&] { return !KeyExists(c, "/alive/idle"); }, absl::Seconds(6)));
  // Stay until well past the kept lease's TTL.
  absl::SleepFor(std::max(absl::ZeroDuration(), start + absl::Milliseconds(3000) - absl::Now()));
  CHECK(KeyExists(c, "/alive/kept"));
  CHECK(keeper->alive());
  CHECK(lost.load() == 0);

  // Destroying the keeper stops renewals but does not revoke.
  keeper.reset();
  CHECK(KeyExists(c, "/alive/kept"));
  CHECK(lost.load() == 0);
  REQUIRE(c.LeaseRevoke(*kept).ok());
}

TEST_CASE_METHOD(EtcdFixture, "a keeper reports a revoked or unreachable lease", "[etcd]") {
  Client& c = *client;
  absl::Notification revoked_lost;
  auto lease = c.LeaseGrant(1);
  REQUIRE(lease.ok());
  auto keeper = c.KeepAlive(*lease, 1, [&revoked_lost] { revoked_lost.Notify(); });
  REQUIRE(c.LeaseRevoke(*lease).ok());
  CHECK(revoked_lost.WaitForNotificationWithTimeout(absl::Seconds(3)));
  CHECK_FALSE(keeper->alive());

  // etcd down for longer than the TTL: the holder must assume the lease is gone.
  auto lease2 = c.LeaseGrant(1);
  REQUIRE(lease2.ok());
  std::atomic<int> lost{0};
  auto keeper2 = c.KeepAlive(*lease2, 1, [&lost] { ++lost; });
  etcd->Stop();
  const absl::Time stopped = absl::Now();
  CHECK(Eventually([&] { return lost.load() == 1; }, absl::Seconds(4)));
  CHECK(absl::Now() - stopped < absl::Seconds(3));
  absl::SleepFor(absl::Milliseconds(300));
  CHECK(lost.load() == 1);  // Exactly once.
}

TEST_CASE_METHOD(EtcdFixture, "a watch sees puts and deletes in order", "[etcd]") {
  Client& c = *client;
  WatchLog prefix_log;
  WatchLog key_log;
  auto prefix_watch = WatchInto(c, prefix_log, "/w/", PrefixEnd("/w/"), 0);
  auto key_watch = WatchInto(c, key_log, "/w/b", "", 0);
  // Watching "from now" counts from the watcher's creation.
  REQUIRE(Eventually([&] { return prefix_watch->next_revision() > 0; }, absl::Seconds(5)));
  REQUIRE(Eventually([&] { return key_watch->next_revision() > 0; }, absl::Seconds(5)));

  REQUIRE(c.Put("/w/a", "1").ok());
  REQUIRE(c.Put("/x/outside", "0").ok());
  REQUIRE(c.Put("/w/b", "2").ok());
  REQUIRE(c.Delete("/w/a").ok());
  auto txn = c.Txn({}, {Op::Put("/w/c", "3"), Op::Put("/w/d", "4")}, {});
  REQUIRE(txn.ok());
  REQUIRE(c.Put("/w/b", "5").ok());

  REQUIRE(prefix_log.WaitForEvents(6));
  std::vector<WatchEvent> ev = prefix_log.events();
  REQUIRE(ev.size() == 6);
  CHECK((ev[0].type == WatchEvent::kPut && ev[0].kv.key == "/w/a" && ev[0].kv.value == "1"));
  CHECK((ev[1].type == WatchEvent::kPut && ev[1].kv.key == "/w/b"));
  CHECK((ev[2].type == WatchEvent::kDelete && ev[2].kv.key == "/w/a"));
  CHECK((ev[3].kv.key == "/w/c" && ev[4].kv.key == "/w/d"));
  CHECK(ev[3].kv.mod_revision == txn->revision);
  CHECK(ev[4].kv.mod_revision == txn->revision);
  CHECK((ev[5].kv.key == "/w/b" && ev[5].kv.value == "5" && ev[5].kv.version == 2));
  for (size_t i = 1; i < ev.size(); ++i) CHECK(ev[i].kv.mod_revision >= ev[i - 1].kv.mod_revision);

  REQUIRE(key_log.WaitForEvents(2));
  CHECK(key_log.events().size() == 2);
  CHECK(key_log.errors().empty());

  // From a past revision: replays history.
  WatchLog replay_log;
  auto replay = WatchInto(c, replay_log, "/w/", PrefixEnd("/w/"), ev[0].kv.mod_revision);
  REQUIRE(replay_log.WaitForEvents(6));
  CHECK(replay_log.events().size() == 6);
  CHECK(replay_log.events()[2].kv.mod_revision == ev[2].kv.mod_revision);
}

TEST_CASE_METHOD(EtcdFixture, "a watch resumes across an etcd restart", "[etcd]") {
  Client& c = *client;
  WatchLog log;
  // The first callback blocks until released, so that the restart and the
  // writes below surely happen while the watch's stream is gone: the events
  // must then come from the resumed stream, neither lost nor repeated.
  absl::Notification entered;
  absl::Notification release;
  std::atomic<bool> first{true};
  auto watch = c.WatchRange(
      "/r/", PrefixEnd("/r/"), 0,
      [&](const std::vector<WatchEvent>& events) {
        log.OnEvents(events);
        if (first.exchange(false)) {
          entered.Notify();
          release.WaitForNotification();
        }
      },
      [&log](const absl::Status& status) { log.OnError(status); });
  // Unblocks the callback before ~Watch joins, also when a REQUIRE throws.
  struct Releaser {
    absl::Notification& n;
    ~Releaser() {
      if (!n.HasBeenNotified()) n.Notify();
    }
  } releaser{release};
  REQUIRE(Eventually([&] { return watch->next_revision() > 0; }, absl::Seconds(5)));
  REQUIRE(c.Put("/r/1", "a").ok());
  REQUIRE(entered.WaitForNotificationWithTimeout(absl::Seconds(10)));

  const std::string endpoint = etcd->Endpoint();
  REQUIRE(c.Put("/r/2", "b").ok());  // Before the kill: may be in flight on the old stream.
  REQUIRE(etcd->Restart().ok());
  CHECK(etcd->Endpoint() == endpoint);
  REQUIRE(c.Put("/r/3", "c").ok());
  REQUIRE(c.Delete("/r/1").ok());
  release.Notify();

  REQUIRE(log.WaitForEvents(4));
  absl::SleepFor(absl::Milliseconds(300));  // Room for a repeated event to show up.
  std::vector<WatchEvent> ev = log.events();
  REQUIRE(ev.size() == 4);
  CHECK(ev[0].kv.key == "/r/1");
  CHECK(ev[1].kv.key == "/r/2");
  CHECK(ev[2].kv.key == "/r/3");
  CHECK((ev[3].kv.key == "/r/1" && ev[3].type == WatchEvent::kDelete));
  for (size_t i = 1; i < ev.size(); ++i) {
    CHECK(ev[i].kv.mod_revision == ev[i - 1].kv.mod_revision + 1);
  }
  CHECK(log.errors().empty());
}

TEST_CASE_METHOD(EtcdFixture, "a watch from a compacted revision fails with OutOfRange",
                 "[etcd]") {
  Client& c = *client;
  auto r1 = c.Put("/k", "1");
  REQUIRE(r1.ok());
  REQUIRE(c.Put("/k", "2").ok());
  auto r3 = c.Put("/k", "3");
  REQUIRE(r3.ok());
  REQUIRE(c.Compact(*r3).ok());
  CHECK(absl::IsOutOfRange(c.Range("/k", "", 0, *r1).status()));

  WatchLog log;
  auto watch = WatchInto(c, log, "/k", "", *r1);
  REQUIRE(log.WaitForError());
  std::vector<absl::Status> errors = log.errors();
  REQUIRE(errors.size() == 1);
  CHECK(absl::IsOutOfRange(errors[0]));
  CHECK(log.events().empty());
}

TEST_CASE_METHOD(EtcdFixture, "a watch may be destroyed from its own callback", "[etcd]") {
  Client& c = *client;
  absl::Mutex mu;
  std::unique_ptr<Watch> watch;
  std::atomic<int> calls{0};
  absl::Notification done;
  auto start = c.Put("/d/0", "x");
  REQUIRE(start.ok());
  {
    absl::MutexLock lock(&mu);  // The callback may run before the assignment.
    watch = c.WatchRange(
        "/d/", PrefixEnd("/d/"), *start,
        [&](const std::vector<WatchEvent>&) {
          ++calls;
          std::unique_ptr<Watch> self;
          {
            absl::MutexLock lock(&mu);
            self = std::move(watch);
          }
          self.reset();  // Must neither deadlock nor crash.
          done.Notify();
        },
        [](const absl::Status&) {});
  }
  REQUIRE(c.Put("/d/1", "y").ok());
  REQUIRE(done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  REQUIRE(c.Put("/d/2", "z").ok());
  absl::SleepFor(absl::Milliseconds(200));
  CHECK(calls.load() == 1);
}

TEST_CASE_METHOD(EtcdFixture, "the client is safe to share between threads", "[etcd]") {
  constexpr int kThreads = 4;
  constexpr int kPuts = 25;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPuts; ++i) {
        if (!client->Put(absl::StrCat("/mt/", t, "/", i), "v").ok()) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(failures.load() == 0);
  auto all = client->GetPrefix("/mt/");
  REQUIRE(all.ok());
  CHECK(all->count == kThreads * kPuts);
}

TEST_CASE("Connect to a dead endpoint fails quickly and names it", "[etcd]") {
  const std::string dead = absl::StrCat("127.0.0.1:", UnusedPort());
  const absl::Time start = absl::Now();
  auto client = Client::Connect({dead}, absl::Seconds(1));
  const absl::Duration took = absl::Now() - start;
  REQUIRE_FALSE(client.ok());
  CHECK(absl::IsUnavailable(client.status()));
  CHECK(absl::StrContains(client.status().message(), dead));
  CHECK_FALSE(absl::StrContains(client.status().message(), "\n"));
  CHECK(took < absl::Seconds(3));

  CHECK(absl::IsInvalidArgument(Client::Connect({}, absl::Seconds(1)).status()));
  CHECK(absl::IsInvalidArgument(Client::Connect({"nonsense"}, absl::Seconds(1)).status()));
}

TEST_CASE_METHOD(EtcdFixture, "calls fail over past a dead endpoint and time out", "[etcd]") {
  const std::string dead = absl::StrCat("127.0.0.1:", UnusedPort());
  auto connected = Client::Connect({dead, "http://" + etcd->Endpoint()}, absl::Seconds(5));
  REQUIRE(connected.ok());
  Client& c = **connected;
  CHECK(c.CurrentEndpoint() == etcd->Endpoint());
  REQUIRE(c.Put("/f/a", "1").ok());
  auto txn = c.Txn({Compare::Version("/f/a", Compare::kEqual, 1)}, {Op::Put("/f/a", "2")}, {});
  REQUIRE(txn.ok());
  CHECK(txn->succeeded);

  // With every endpoint down, each call ends by its deadline.
  etcd->Stop();
  c.SetRpcTimeout(absl::Milliseconds(700));
  CHECK(c.RpcTimeout() == absl::Milliseconds(700));
  absl::Time start = absl::Now();
  auto get = c.Get("/f/a");
  CHECK(absl::IsUnavailable(get.status()));
  CHECK(absl::StrContains(get.status().message(), dead));
  CHECK(absl::Now() - start < absl::Seconds(3));
  start = absl::Now();
  CHECK_FALSE(c.Txn({}, {Op::Put("/f/b", "1")}, {}).ok());
  CHECK(absl::Now() - start < absl::Seconds(3));

  // A watch and a keeper that are retrying stop promptly when destroyed.
  WatchLog log;
  auto watch = WatchInto(c, log, "/f/", PrefixEnd("/f/"), 0);
  auto keeper = c.KeepAlive(/*lease=*/12345, /*ttl_seconds=*/30, [] {});
  absl::SleepFor(absl::Milliseconds(300));
  start = absl::Now();
  watch.reset();
  keeper.reset();
  CHECK(absl::Now() - start < absl::Milliseconds(500));
  CHECK(log.errors().empty());

  // And recover once etcd is back.
  REQUIRE(etcd->Restart().ok());
  c.SetRpcTimeout(absl::Seconds(5));
  auto after = c.Get("/f/a");
  REQUIRE(after.ok());
  REQUIRE(after->kvs.size() == 1);
  CHECK(after->kvs[0].value == "2");
}

}  // namespace
}  // namespace weft::etcd
