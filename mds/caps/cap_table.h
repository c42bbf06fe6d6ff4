// The caps a rank has leased to client sessions (DESIGN.md, "Capabilities";
// the bits are common/caps/cap_bits.h): one entry per (inode, session), with
// the bits issued, the bits being revoked, and one sequence number.
//
// Leased bits (`Ls` on a directory: its names; `As Fs`: an inode's
// attributes) are trusted by their holder for `lease` from the moment it
// sent the request a grant came with; the MDS counts the same span (plus a
// margin for clock rate) from when it granted, which is later, so the MDS
// never believes a cap ended while its holder still trusts it. The
// session's heartbeat (Renew) renews every cap it holds in the same way,
// from the heartbeat on, except bits being revoked: a revoke freezes the
// cap's end at the latest the holder may trust it (its grant's or its last
// renewal's), so a holder that renews but does not acknowledge cannot hold
// a change back for longer than a lease.
//
// Before a change, every other holder of the bits the change invalidates is
// sent a revoke naming those bits (Conflicts), and the change waits for the
// acknowledgements, or for the bits to run out when the holder is gone.
// While a revoke is outstanding nobody but the changer is granted those
// bits on that inode, so a steady reader cannot starve a writer.
//
// Sequence numbers tell a grant from a revoke that crossed it on the wire:
// a cap keeps one number while it lives and is granted nothing it had
// taken back; a revoke names it, and the client ignores a grant of the same
// bits whose number it has already seen revoked. A cap granted bits again
// after an acknowledged revoke of them (or after they ran out) takes a new
// number, so the client takes that grant.
//
// Not thread-safe: the rank's lock guards it. Memory: one entry per (inode,
// session) with a bit alive, pruned as they run out (Expire), and counts per
// session (HeldBy: what the MDS recalls from and refuses grants beyond,
// Leases::RecallForMemory).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "common/caps/cap_bits.h"

namespace weft::mds {

class CapTable {
 public:
  struct Revoke {
    uint64_t session = 0;
    uint64_t ino = 0;
    uint64_t seq = 0;
    uint32_t bits = 0;  // taken back
  };

  // `lease` 0 disables caps: nothing is granted.
  explicit CapTable(absl::Duration lease) : lease_(lease) {}

  absl::Duration lease() const { return lease_; }

  // Grants (or refreshes) leased `bits` of `session`'s cap on `ino`;
  // returns the cap's sequence number, or 0 when they cannot be granted now
  // (caps disabled, a revoke of any of them outstanding for someone else's
  // change or for this holder, or a cap with no leased bit yet while
  // `*room` is 0). Such a cap takes one from `*room` (null: no limit); more
  // bits on one that has some take none.
  uint64_t Grant(uint64_t ino, uint64_t session, uint32_t bits, absl::Time now,
                 size_t* room = nullptr);

  // Before `session` changes `ino` in a way that invalidates `bits` held by
  // other sessions (the changer keeps its own: it knows what it changed).
  // Drops bits that ran out; appends the revokes not yet sent
  // to `to_send`; returns true while any bit that must go is still alive,
  // with the time the last of them runs out at the latest in `*wait_until`
  // (min-ed into it). No grant of those bits on `ino` to anyone but
  // `session` until it returns false or the revokes run out.
  bool Conflicts(uint64_t ino, uint64_t session, uint32_t bits, absl::Time now,
                 std::vector<Revoke>* to_send, absl::Time* wait_until);

  // The holder acknowledged a revoke (or gave back for a recall) of `bits`
  // of its cap `seq` on `ino`: they are gone. Returns whether it released
  // something.
  bool Ack(uint64_t session, uint64_t ino, uint64_t seq, uint32_t bits);

  // Every cap of `session` is gone (closed, expired or evicted).
  void DropSession(uint64_t session);
  // Its leased bits are gone (its lease stream started over, which makes
  // the client drop everything it knew); its file bits stay with its opens.
  void DropLeased(uint64_t session);

  // Drops bits, caps and revoke marks that ran out. Looks at every cap only
  // when one may have: a session holding leased bits is not renewed, or a
  // revoke froze a cap's end (or marked an inode) and that end has passed.
  // A renewed session's caps live on, so with every holder renewing it
  // costs a look at each session, not each cap (the rank calls it five
  // times a second under its lock: a scan of 720,000 caps took 26 ms).
  void Expire(absl::Time now);

  // `session`'s heartbeat reached the MDS at `now`: its bits not being
  // revoked live on until a lease from now.
  void Renew(uint64_t session, absl::Time now);

  // The bits `session` holds on `ino` that have not run out at `now`
  // (revoked or not: its holder may still trust them).
  uint32_t Held(uint64_t ino, uint64_t session, absl::Time now) const;

  // ---- file bits: not leased by time, held while the file is open
  // `session` now holds `ino` open for reading (wanted Fr) and/or writing
  // (wanted Fw); 0: closed. Issues Fr Fc to every opener and Fw to writers;
  // a writer new to the file starts with Fb (the caller takes it back when
  // the file is shared: SetBuffer); Fx goes to a writer that is the file's
  // only opener, and is taken from it as soon as it is not.
  void SetWanted(uint64_t ino, uint64_t session, uint32_t wanted);
  // Gives or takes back Fb of a writer of `ino` (no-op for a non-writer).
  void SetBuffer(uint64_t ino, uint64_t session, bool may_buffer);
  // What `session` wants of `ino` (Fr, Fw) and the bits it holds, leased
  // ones that ran out included until the next Expire.
  uint32_t Wanted(uint64_t ino, uint64_t session) const;
  uint32_t Issued(uint64_t ino, uint64_t session) const;
  // Whether any session holds any file open for writing.
  bool AnyWriter() const { return total_.wanted_fw > 0; }
  // Calls f(session, wanted, issued) for every session holding `ino` open.
  template <typename F>
  void ForEachOpener(uint64_t ino, F f) const {
    auto it = inodes_.find(ino);
    if (it == inodes_.end()) return;
    for (const auto& [session, cap] : it->second.holders) {
      if (cap.wanted != 0) f(session, cap.wanted, cap.issued);
    }
  }

  size_t size() const { return total_.count; }  // (inode, session) caps kept
  // Caps kept with `bit` issued (one bit of cap_bits.h).
  size_t CountWith(uint32_t bit) const { return total_.With(bit); }
  // Caps `session` holds (alive or run out but not yet dropped by Expire),
  // and of them those with a leased bit: what mds_max_caps_per_client
  // bounds (a client may hold as many files open as it likes).
  size_t HeldBy(uint64_t session) const {
    auto it = held_.find(session);
    return it == held_.end() ? 0 : it->second.count;
  }
  size_t LeasedBy(uint64_t session) const {
    auto it = held_.find(session);
    return it == held_.end() ? 0 : it->second.leased;
  }
  // Of those, the caps with `bit`.
  size_t HeldWith(uint64_t session, uint32_t bit) const {
    auto it = held_.find(session);
    return it == held_.end() ? 0 : it->second.With(bit);
  }
  // Caps ever given leased bits when they had none (not refreshes).
  uint64_t added_total() const { return added_total_; }
  // Such grants refused for want of room.
  uint64_t refused_total() const { return refused_total_; }
  // Sessions holding caps, and how many with leased bits.
  template <typename F>
  void ForEachHolder(F f) const {
    for (const auto& [session, counts] : held_) f(session, counts.leased);
  }

  // Calls f(ino, session, bits) for every cap with a bit that has not run
  // out at `now` (the bits alive, revoked or not: its holder may still
  // trust them).
  template <typename F>
  void ForEachLive(absl::Time now, F f) const {
    for (const auto& [ino, inode] : inodes_) {
      for (const auto& [session, cap] : inode.holders) {
        if (uint32_t bits = AliveBits(session, cap, now)) f(ino, session, bits);
      }
    }
  }

 private:
  struct Cap {
    uint64_t seq = 0;
    uint32_t issued = 0;
    uint32_t wanted = 0;    // Fr, Fw: the session holds the file open
    uint32_t revoking = 0;  // of issued: a revoke was sent
    uint32_t retired = 0;   // taken back since seq was given: a new grant needs a new seq
    // The holder stops trusting it before this, or before its session's
    // renewal runs out (bits being revoked: this alone, frozen).
    absl::Time expires;
  };
  struct Inode {
    absl::flat_hash_map<uint64_t, Cap> holders;  // session -> cap
    uint64_t revoker = 0;        // the session whose change waits, if any
    uint32_t revoke_bits = 0;    // what it waits for: granted to nobody else
    absl::Time revoke_until;     // the mark ends by itself then
    bool idle() const { return holders.empty() && revoker == 0; }  // nothing to keep
  };
  struct Counts {
    size_t count = 0;
    size_t leased = 0;     // caps with a leased bit issued
    size_t wanted_fw = 0;  // caps whose session writes the file
    std::array<size_t, weft::caps::kBitCount> bits{};
    size_t With(uint32_t bit) const {
      for (int i = 0; i < weft::caps::kBitCount; ++i) {
        if (bit == (1u << i)) return bits[i];
      }
      return 0;
    }
  };

  absl::Time ExpiryFrom(absl::Time now) const;
  // Whether a cap or mark may have run out at `now` (Expire).
  bool MayHaveRunOut(absl::Time now) const;
  absl::Time RenewedUntil(uint64_t session) const {
    auto it = renewed_.find(session);
    return it == renewed_.end() ? absl::InfinitePast() : it->second;
  }
  // The bits of `cap` its holder may still trust at `now` (file bits last
  // as long as the opens they are for).
  uint32_t AliveBits(uint64_t session, const Cap& cap, absl::Time now) const {
    const uint32_t file = cap.issued & weft::caps::kFile;
    if (cap.expires > now) return cap.issued;
    return file | (RenewedUntil(session) > now ? cap.issued & ~cap.revoking : 0);
  }
  // Drops the bits of `cap` that ran out at `now`; false when nothing is
  // left of it, no bit and no open (the caller erases it).
  bool Prune(uint64_t session, Cap* cap, absl::Time now);
  // Sets the wanted bits of a cap, keeping the counts.
  void SetWantedBits(uint64_t session, Cap* cap, uint32_t wanted);
  // Gives Fx to the only opener of `inode` when it writes; takes it from
  // everyone else.
  void UpdateExclusive(Inode* inode);
  // Every change of a cap's issued bits, and every insertion and removal of
  // one, goes through these, so the counts stay exact.
  void SetIssued(uint64_t session, Cap* cap, uint32_t issued);
  void Added(uint64_t session);
  void Removed(uint64_t session, const Cap& cap);

  const absl::Duration lease_;
  uint64_t next_seq_ = 1;
  absl::flat_hash_map<uint64_t, Inode> inodes_;
  absl::flat_hash_map<uint64_t, Counts> held_;  // session -> its caps
  absl::flat_hash_map<uint64_t, absl::Time> renewed_;  // session -> its renewal's end
  // Revokes froze caps' ends or marked inodes, the latest ending then: the
  // next Expire after it looks at every cap.
  bool frozen_ = false;
  absl::Time frozen_until_ = absl::InfinitePast();
  Counts total_;
  uint64_t added_total_ = 0;
  uint64_t refused_total_ = 0;
};

}  // namespace weft::mds
