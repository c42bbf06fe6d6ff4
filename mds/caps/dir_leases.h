// Directory leases (the `Ls` capability of DESIGN.md, "Capabilities"): which
// client sessions may answer lookups in a directory from what they know,
// without asking the MDS, and what must be taken back before the directory
// changes.
//
// A session holds a lease on a directory after a reply granted it (lookups,
// readdir, and its own changes in the directory grant one). The client
// trusts it for `lease` from the moment it sent the request; the MDS counts
// the same span (plus a margin for clock rate) from when it granted, which
// is later, so the MDS never believes a lease ended while its holder still
// trusts it. The session's heartbeat (Renew) renews every lease it holds
// in the same way, from the heartbeat on, except those being revoked: a
// revoke freezes the lease's end at the latest the holder may trust it
// (its grant's or its last renewal's), so a holder that renews but does
// not acknowledge cannot hold a change back for longer than a lease.
// Before a change to a directory (an entry added, removed or renamed; its
// mode, owner or access ACL changed) every other holder's lease is revoked:
// the MDS sends a revoke on the holder's lease stream and the change waits
// for the acknowledgement, or for the lease to run out when the holder is
// gone. While a revoke is outstanding nobody else is granted that
// directory, so a steady reader cannot starve a writer.
//
// Sequence numbers tell a grant from a revoke that crossed it on the wire:
// a holder keeps one number for as long as its lease lives (refreshes keep
// it); a revoke names it, and the client ignores a grant whose number it
// has already seen revoked.
//
// The same table keeps the attribute caps of other inodes (Leases::attrs_):
// the protocol is the same, only what a change is differs.
//
// Not thread-safe: the rank's lock guards it. Memory: one entry per
// (directory, session) lease alive, pruned as they run out (Expire), and a
// count per session (HeldBy: what the MDS recalls from and refuses grants
// beyond, Leases::RecallForMemory).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"

namespace weft::mds {

class DirLeaseTable {
 public:
  struct Revoke {
    uint64_t session = 0;
    uint64_t ino = 0;
    uint64_t seq = 0;
  };

  // `lease` 0 disables leases: nothing is granted.
  explicit DirLeaseTable(absl::Duration lease) : lease_(lease) {}

  absl::Duration lease() const { return lease_; }

  // Grants (or refreshes) `session`'s lease on directory `ino`; returns its
  // sequence number, or 0 when it cannot be granted now (leases disabled, a
  // revoke outstanding on the directory for someone else's change, or a new
  // lease while `*room` is 0). A new lease takes one from `*room` (null: no
  // limit); a refresh takes none.
  uint64_t Grant(uint64_t ino, uint64_t session, absl::Time now, size_t* room = nullptr);

  // Before `session` changes directory `ino` (`include_self`: the change
  // also invalidates what `session` itself knows, as a change of the
  // directory's permissions does). Drops leases that ran out; appends the
  // revokes not yet sent to `to_send`; returns true while any lease that
  // must go is still alive, with the time the last of them runs out at the
  // latest in `*wait_until` (min-ed into it). No grant on `ino` to anyone
  // but `session` until it returns false or the revokes run out.
  bool Conflicts(uint64_t ino, uint64_t session, bool include_self, absl::Time now,
                 std::vector<Revoke>* to_send, absl::Time* wait_until);

  // The holder acknowledged a revoke: its lease `seq` on `ino` is gone.
  // Returns whether it released something.
  bool Ack(uint64_t session, uint64_t ino, uint64_t seq);

  // Every lease of `session` is gone (closed, expired, or its lease stream
  // started over, which makes the client drop everything it held).
  void DropSession(uint64_t session);

  // Drops leases and revoke marks that ran out.
  void Expire(absl::Time now);

  // `session`'s heartbeat reached the MDS at `now`: its leases not being
  // revoked live on until a lease from now.
  void Renew(uint64_t session, absl::Time now);

  size_t size() const { return held_total_; }  // (inode, session) entries kept
  // Entries `session` holds (alive or run out but not yet dropped by Expire).
  size_t HeldBy(uint64_t session) const {
    auto it = held_.find(session);
    return it == held_.end() ? 0 : it->second;
  }
  // Entries ever added (grants that were not refreshes).
  uint64_t added_total() const { return added_total_; }
  // New grants refused for want of room.
  uint64_t refused_total() const { return refused_total_; }
  // Sessions by entries held.
  const absl::flat_hash_map<uint64_t, size_t>& held() const { return held_; }

  // Calls f(ino, session) for every lease that has not run out at `now`
  // (revoked or not: its holder may still trust it).
  template <typename F>
  void ForEachLive(absl::Time now, F f) const {
    for (const auto& [ino, dir] : dirs_) {
      for (const auto& [session, h] : dir.holders) {
        if (Alive(session, h, now)) f(ino, session);
      }
    }
  }

 private:
  struct Holder {
    uint64_t seq = 0;
    // The holder stops trusting it before this, or before its session's
    // renewal runs out (not once revoking: then this alone, frozen).
    absl::Time expires;
    bool revoking = false;    // a revoke was sent
  };
  struct Dir {
    absl::flat_hash_map<uint64_t, Holder> holders;  // session -> lease
    uint64_t revoker = 0;        // the session whose change waits, if any
    absl::Time revoke_until;     // the mark ends by itself then
    bool idle() const { return holders.empty() && revoker == 0; }  // nothing to keep
  };

  absl::Time ExpiryFrom(absl::Time now) const;
  absl::Time RenewedUntil(uint64_t session) const {
    auto it = renewed_.find(session);
    return it == renewed_.end() ? absl::InfinitePast() : it->second;
  }
  // The holder may still trust the lease at `now`.
  bool Alive(uint64_t session, const Holder& h, absl::Time now) const {
    return h.expires > now || (!h.revoking && RenewedUntil(session) > now);
  }
  // Holder bookkeeping: every insertion and removal of a (ino, session)
  // entry goes through these, so held_ stays exact.
  void Added(uint64_t session);
  void Removed(uint64_t session, size_t n = 1);

  const absl::Duration lease_;
  uint64_t next_seq_ = 1;
  absl::flat_hash_map<uint64_t, Dir> dirs_;
  absl::flat_hash_map<uint64_t, size_t> held_;  // session -> entries
  absl::flat_hash_map<uint64_t, absl::Time> renewed_;  // session -> its renewal's end
  size_t held_total_ = 0;
  uint64_t added_total_ = 0;
  uint64_t refused_total_ = 0;
};

}  // namespace weft::mds
