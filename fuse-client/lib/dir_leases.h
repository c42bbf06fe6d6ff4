// What a client may know about directories under the MDS's directory leases
// (mds/cache/dir_leases.h has the protocol): which names are absent, so
// that a lookup of a name that does not exist — the kernel's first step of
// every create — is answered here instead of by the MDS, and so is the
// inode a name in a complete directory stands for.
//
// A lease is trusted until `lease_ms` after the request that brought it was
// sent, or after the last session heartbeat that renewed it (Renewed), and
// only while the lease stream is up: revokes travel on it. Every
// reply passes through Observe(), which installs its grants and, under the
// lease the same reply carries, learns from the operation: a lookup's ENOENT
// makes the name known absent, a lookup that found it the inode it names;
// a mkdir makes the new directory complete (it is empty, so every name not
// added since is absent); this client's own creates, links, renames and
// removals keep what it knows of the directory true.
// A revoke forgets everything about the directory; completeness comes back
// only with a new mkdir. Absent names are answered only to credentials that
// the MDS let search the directory under the same lease. This client's own
// change of the directory's mode, owner or access ACL keeps its lease (the
// names stay true) but forgets who may search it.
//
// The attribute caps of other inodes (MetaReply.attr_caps, revoked by a
// LeaseEvent with `attrs`) follow the same rules of trust, sequence numbers
// and crossing: while one is trusted, the inode's cached attributes (and
// the kernel's) stand for the MDS's (AttrRemaining).
//
// Thread-safe; no I/O.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/mds_client.pb.h"

namespace weft::client {

class DirLeases {
 public:
  // Names remembered per directory beyond which it stops being complete, and
  // absent names remembered per directory.
  static constexpr size_t kCompleteNamesMax = 200000;
  static constexpr size_t kAbsentNamesMax = 4096;

  // Taken when a request is sent; a reply's grants count only if no
  // DropAll() or StreamUp() happened since.
  uint64_t epoch();
  // The lease stream is registered (its hello arrived, carrying the
  // stream's number): grants count again.
  void StreamUp(uint64_t stream);
  // An event after the hello was taken from the stream (and applied).
  void TookEvent();
  // A session heartbeat sent at `sent` (epoch() then) was answered: every
  // lease and cap held is trusted until `lease` after `sent`, once
  // `events` events of stream `stream` have been taken (a revoke the MDS
  // queued before the renewal is applied first). See
  // pb::SessionReply.lease_stream.
  void Renewed(absl::Time sent, uint64_t epoch, uint64_t stream, uint64_t events,
               absl::Duration lease);
  // The stream broke, the session changed or the MDS restarted: nothing is
  // trusted until the next StreamUp().
  void DropAll();
  // A request's outcome is unknown (no reply): what this client changed may
  // not be what it knows, so it forgets everything; the stream stays up.
  void ForgetAll();
  // A revoke: forgets the directory if it holds lease `seq` or older.
  void Revoke(uint64_t ino, uint64_t seq);
  // A revoke of the attribute cap `seq` (or older) on `ino`.
  void RevokeAttrs(uint64_t ino, uint64_t seq);
  // A recall for memory (LeaseEvent.recall_caps): gives back up to `n` of
  // the trusted attribute caps and directory leases, those granted or
  // refreshed longest ago first, each as if revoked. Returns them as the
  // acknowledgements to send (ino, seq, attrs for a cap, released).
  std::vector<pb::LeaseEvent> GiveBack(size_t n, absl::Time now);
  // How much longer this client trusts its attribute cap on `ino` for
  // attributes at `version` (zero: none held, the stream is down, or the
  // attributes are older than those the cap came with: a reply's grant is
  // installed here before its attributes reach the caller's cache).
  absl::Duration AttrRemaining(uint64_t ino, uint64_t version, absl::Time now);

  // Takes what a reply says (see above). `status` is the reply's (OK when it
  // succeeded); `sent` and `epoch` are from when it was sent.
  void Observe(const pb::MetaRequest& request, const pb::MetaReply& reply,
               const absl::Status& status, absl::Time sent, uint64_t epoch);

  // What this client knows of `name` in `dir` for `creds` now: nothing
  // (nullopt), absent (0), or the inode it names (complete directories).
  std::optional<uint64_t> Known(uint64_t dir, const std::string& name, const pb::Creds& creds,
                                absl::Time now);

  // How much longer this client trusts its lease on `dir` (zero: none held,
  // or the stream is down). What the kernel keeps of the directory's names
  // must run out by then: a revoke reaches this client only while it holds one.
  absl::Duration Remaining(uint64_t dir, absl::Time now);

  size_t size();  // directories with a trusted lease (tests, status)
  size_t attr_caps();  // inodes with a trusted attribute cap (tests, status)

 private:
  struct Dir {
    uint64_t seq = 0;             // 0: no lease
    absl::Time expires;
    uint64_t revoked = 0;         // grants up to this seq were revoked
    absl::Time revoked_at;
    bool complete = false;
    absl::flat_hash_map<std::string, uint64_t> names;  // when complete: every name (inode, 0 unknown)
    absl::flat_hash_set<std::string> absent;  // known absent (also when not complete)
    // When not complete: names a lookup found under this lease, or this
    // client made, and their inodes.
    absl::flat_hash_map<std::string, uint64_t> found;
    std::vector<pb::Creds> searchers;         // may search it under this lease
    // This client changed the directory's mode, owner or access ACL, and
    // heard so at this time: a search check of a request sent before may
    // have been made under the old permissions (ChangedPermissions).
    absl::Time permissions_changed = absl::InfinitePast();
  };

  struct AttrCap {
    uint64_t seq = 0;      // 0: none
    absl::Time expires;
    uint64_t version = 0;  // of the attributes the grant came with
    uint64_t revoked = 0;  // grants up to this seq were revoked
    absl::Time revoked_at;
  };

  // When a grant that runs out at `expires` stops being trusted, with the
  // session's renewal.
  absl::Time Until(absl::Time expires) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return std::max(expires, renewed_until_);
  }
  // A lease is held and has not run out.
  bool Trusted(const Dir& d, absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool TrustedAttrs(const AttrCap& a, absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The lease `seq` on `ino` if it is the one held and trusted.
  Dir* Held(uint64_t ino, uint64_t seq, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The grant of `ino` in `reply`, 0 if none.
  static uint64_t SeqIn(const pb::MetaReply& reply, uint64_t ino);
  // The version of `ino`'s attributes in `reply`, 0 if none.
  static uint64_t VersionIn(const pb::MetaReply& reply, uint64_t ino);
  void Forget(Dir* d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // This client's own change of who may search `dir` succeeded.
  void ChangedPermissions(uint64_t dir, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The inode `name` in `dir` is known to stand for; 0 when not known.
  uint64_t InodeKnown(uint64_t dir, const std::string& name) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `name` exists in `dir`, as inode `ino` (0: not known which).
  void Added(uint64_t dir, const std::string& name, uint64_t ino)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `name` is gone from `dir`, under the lease `reply` granted on it.
  void Absent(const pb::MetaReply& reply, uint64_t dir, const std::string& name, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A lookup found `name` in `dir` as `ino`, under the lease `reply` granted.
  void Found(const pb::MetaReply& reply, uint64_t dir, const std::string& name, uint64_t ino,
             absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Prune(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 1;
  bool up_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<uint64_t, Dir> dirs_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, AttrCap> attrs_ ABSL_GUARDED_BY(mu_);
  absl::Time last_prune_ ABSL_GUARDED_BY(mu_);
  // Renewals by the session heartbeat (Renewed).
  uint64_t stream_ ABSL_GUARDED_BY(mu_) = 0;  // the stream's number, 0: none
  uint64_t taken_ ABSL_GUARDED_BY(mu_) = 0;   // events taken from it
  absl::Time renewed_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  struct PendingRenewal {
    uint64_t events = 0;
    absl::Time until;
  };
  std::optional<PendingRenewal> pending_ ABSL_GUARDED_BY(mu_);  // waiting for events
};

}  // namespace weft::client
