// The simulation's world (tests/sim/sim.h): one filesystem's rank and its
// successive incarnations, the object store they share, the clock, and the
// simulated clients. Private to tests/sim: sim.cc drives it, workload.cc
// makes the clients' requests.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock/clock.h"
#include "common/fault/fault.h"
#include "common/objects/mem_objects.h"
#include "common/rpc/rpc.h"
#include "common/status/status.h"
#include "mds/fs/names.h"
#include "mds/rank.h"
#include "mds/request_run.h"
#include "tests/sim/model.h"
#include "tests/sim/sim.h"
#include "tests/sim/view.h"

// Builds the line only when tracing.
#define SIM_TRACE(line)              \
  do {                               \
    if (options_.trace) Trace(line); \
  } while (0)

namespace weft::sim {

using mds::FromWire;
using mds::MdsRank;
using mds::Request;
using mds::Reply;
using mds::RequestRun;
using mds::ToWire;
using Kind = mds::RunOutcome::Kind;

inline constexpr uint32_t kFs = 1;
inline const PoolId kMetaPool(1);
inline const PoolId kDataPool(2);
inline constexpr uint32_t kRenameNoReplace = 1;
inline constexpr uint32_t kRenameExchange = 2;
inline constexpr uint32_t kXattrCreate = 1;
inline constexpr uint32_t kXattrReplace = 2;

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint64_t Next() { return gen_(); }
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  bool Chance(double p) { return static_cast<double>(Next() >> 11) * 0x1.0p-53 < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

 private:
  std::mt19937_64 gen_;
};

// FNV-1a over what happened.
class Digest {
 public:
  void Add(const std::string& s) {
    for (unsigned char c : s) h_ = (h_ ^ c) * 0x100000001b3ull;
    h_ = (h_ ^ 0xff) * 0x100000001b3ull;
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

inline int ErrnoOf(const absl::Status& s) { return s.ok() ? 0 : StatusToErrno(s); }

inline bool Retryable(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) || absl::IsAborted(s);
}

// What a client expects of one request, decided when it is sent from what
// the model knows then (only this client changes its names meanwhile).
struct Plan {
  pb::MetaRequest request;
  const char* what = "";
  bool no_retry = false;  // bad input: a lost session is the answer, not a reason to reopen
  uint64_t session = 0;   // sent in this session instead of the client's (a stale one)
  uint64_t tid = 0;       // sent with this tid instead of a new one (a duplicate)
  // Checks the final answer and applies it to the model: "" or what is wrong.
  std::function<std::string(const absl::Status&, const pb::MetaReply&)> check;
};

struct Pending {
  Plan plan;
  uint64_t tid = 0;
  Reply answer;         // the rank's, for the run
  pb::MetaReply reply;  // the answer as the client gets it (ToWire)
  Request request;                  // plan.request as the adapter converts it, for the run
  std::unique_ptr<RequestRun> run;  // null: to be sent (again)
  RequestRun::Outcome outcome;      // the last one, while the run waits
  absl::Time io_at;                 // its I/O completes no earlier
  int attempts = 0;
};

struct Client {
  int index = 0;
  // Client 0 is root; the others are users 1000 + index, each owning its
  // home directory, all sharing /shared (mode 01777).
  uint32_t uid = 0, gid = 0;
  uint64_t session = 0;
  uint64_t boot = 0;  // the rank incarnation it last heard from
  uint64_t next_tid = 1;
  std::optional<Pending> pending;
  std::map<uint64_t, pb::MetaRequest> unsafe;  // tid -> resend
  std::map<uint64_t, int> handles;             // ino -> open handles
  std::map<uint64_t, int> writers;             // ino -> of them, for writing
  std::map<uint64_t, bool> inline_files;       // ino -> its data is inline (last seen)
  uint64_t stream_gen = 0;
  bool needs_reconnect = false;
  bool resent = false;  // its unsafe requests went with a Reconnect not answered yet
  uint64_t home = 0;
  std::vector<uint64_t> dirs;                        // its own directories
  std::set<std::pair<uint64_t, std::string>> names;  // its own names
  std::deque<Plan> follow_ups;  // requests an answer asked for (an inline move)
  int counter = 0;
  int64_t last_renew_ms = 0;
  std::optional<pb::LockType> lock;  // its flock on the shared lock file
  std::deque<pb::LeaseEvent> inbox;  // events not yet acknowledged
  // Caps it was granted, by inode: what it gives back from, oldest first,
  // when the rank recalls caps.
  struct HeldCap {
    uint64_t seq = 0;      // the newest seen
    uint32_t bits = 0;     // Ls, As Fs
    uint64_t granted = 0;  // order of its first grant
  };
  std::map<uint64_t, HeldCap> caps;
  uint64_t grants = 0;
  // Stopped answering (SIGSTOP, a cut network) until `thaw_at`: it renews
  // nothing, acknowledges nothing, sends nothing.
  bool frozen = false;
  absl::Time thaw_at;
  int osd_gen = 0;  // each session gets a new OSD identity (an evicted one is refused)
  bool evicted = false;  // its session was evicted; it has not opened another yet
  absl::Time delivered;  // when it last took its lease events
  std::string osd_name() const { return absl::StrCat("osd.", index, ".", osd_gen); }
};

class World {
 public:
  explicit World(const SimOptions& options)
      : options_(options),
        rng_(options.seed),
        freeze_rng_(options.seed ^ 0x5eed0f5eed0full),
        follow_rng_(options.seed ^ 0xf0110f0110f011ull) {}

  SimResult Run();

 private:
  // ---- the rank
  mds::RankOptions MakeRankOptions();
  // The next incarnation: the standby-replay follower when there is one
  // (it replays only what it had not read), else a fresh rank.
  bool StartIncarnation();
  void Crash(const std::string& why);
  mds::RankEnv MakeEnv(objects::Objects* objects);
  // Standby-replay: a rank of its own object client follows the journal
  // (MdsRank::Follow) at random steps, between the active rank's writes,
  // flushes and trims; one that fell behind starts over.
  void StartFollower();
  void FollowStep();
  absl::Status Hook(const objects::MemObjects::Request& request);

  // ---- driving requests
  // A request driven to its end at once (setup, bad input, resends).
  absl::Status CallNow(Client& c, pb::MetaRequest request, pb::MetaReply* reply);
  void Advance(Client& c);
  // A recall for memory: the client gives back `n` caps and leases.
  void GiveBack(Client& c, uint32_t n);
  void Answer(Client& c, absl::Status status);
  bool Reconnect(Client& c);
  void OpenSession(Client& c);
  // `all`: every event acknowledged now (none left for later).
  void DeliverEvents(Client& c, bool all = false);
  void Renew(Client& c);
  // Now and then an idle client freezes for a while; frozen ones thaw when
  // their time comes (all of them once the run drains).
  void FreezeAndThaw(bool draining);
  // Sessions the rank evicted: each must have been fenced first; the client
  // loses its handles, locks, caps and events with it (its unsafe requests
  // were made durable by the eviction's own journal event).
  void NoteEvictions();

  // ---- the workload
  Plan NextPlan(Client& c);
  Plan MakeMkdir(Client& c);
  Plan MakeCreate(Client& c);
  Plan MakeSymlink(Client& c);
  Plan MakeLink(Client& c);
  Plan MakeUnlink(Client& c, bool dir);
  Plan MakeRename(Client& c);
  Plan MakeSetattr(Client& c);
  Plan MakeXattr(Client& c);
  Plan MakeOpen(Client& c);
  // A read-only open of `target`, a file another client holds open to write.
  Plan MakeSharedOpen(Client& c, uint64_t target);
  Plan MakeRelease(Client& c);
  Plan MakeWrite(Client& c);
  Plan MakeLock(Client& c);
  Plan MakeLookup(Client& c);
  Plan MakeReaddir(Client& c);
  Plan MakeReaddirShared(Client& c);
  Plan MakeStatOther(Client& c);
  Plan MakeBadInput(Client& c);
  std::string Fresh(Client& c) { return absl::StrCat("n", c.index, "_", c.counter++); }
  std::pair<uint64_t, std::string> OwnName(Client& c);
  // A name this client made, in the model with it as owner.
  void Made(Client& c, uint64_t dir, const std::string& name, uint64_t ino, uint32_t mode,
            const std::string& target = "");
  // Whether the MDS refuses `c` a name in `dir`: search permission, and
  // write permission too when the name changes (`modify`).
  bool Denied(const Client& c, uint64_t dir, bool modify) const {
    return !model_.May(dir, c.uid, c.gid, modify ? 3 : 1);
  }

  // ---- checks
  View ReadNow();
  void CheckStep();
  // At the end: every handle released and every session closed, the purge
  // runs out, and then no stray, purge or data object is left of a removed
  // inode.
  void CheckPurged();
  std::string CompareModel(const View& view);
  void Fail(const std::string& what);
  void Trace(const std::string& line);

  const SimOptions options_;
  Rng rng_;
  // Freezes draw from their own generator: a run without them takes the
  // same steps as before they existed.
  Rng freeze_rng_;
  bool freezes_ = false;
  // Standby-replay draws from its own generator too.
  Rng follow_rng_;
  bool standby_replay_ = false;
  std::unique_ptr<objects::Objects> follower_objects_;
  std::unique_ptr<MdsRank> follower_;
  std::string follower_name_;
  std::set<std::string> fenced_;  // OSD identities the rank blocklisted
  uint64_t osd_epoch_ = 1;
  Digest digest_;
  SimResult result_;
  ManualClock clock_;
  objects::MemObjects store_;
  std::unique_ptr<objects::Objects> objects_;
  std::unique_ptr<MdsRank> rank_;
  std::string rank_name_;
  int incarnation_ = 0;
  Model model_{mds::kRootIno};
  std::vector<Client> clients_;
  uint64_t shared_ = 0, lock_file_ = 0;
  bool crashed_ = false;  // the hook saw the rank die in the middle of a step
  int crash_after_ = -1;  // mutations until the armed crash (-1: none)
  bool faults_ = false;
  double refuse_p_ = 0;
  bool links_ = false;
  bool rstats_ok_ = true;
  mds::RankOptions rank_options_;
};

// Checks an answer whose status must be `want` (0: OK); on OK runs `apply`.
inline std::function<std::string(const absl::Status&, const pb::MetaReply&)> Expect(
    int want, std::function<std::string(const pb::MetaReply&)> apply = nullptr) {
  return [want, apply](const absl::Status& s, const pb::MetaReply& reply) -> std::string {
    const int got = ErrnoOf(s);
    if (got != want) {
      return absl::StrCat("errno ", got, " (", s.ToString(), "), the model says ", want);
    }
    if (s.ok() && apply) return apply(reply);
    return "";
  };
}

}  // namespace weft::sim
