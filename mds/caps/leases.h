// What a rank lets clients know or do without asking it, and how it takes
// that back (the capabilities of DESIGN.md): the caps leased by time, in
// one table (cap_table.h: `Ls` on directories, a session may answer lookups
// from what it knows; `As Fs` on any inode, it may answer `stat`), the recall of a writer's
// buffered writes before another session sees the file, the hold of those
// writes while a truncate cuts the file's objects, attribute authority of a
// file's creator, write-through and page invalidation of files several
// sessions hold open, and the per-session streams all of their events
// travel on (MdsService's LeaseStream: revokes, recalls, holds and
// releases).
//
// Protocol, in brief (docs/ARCHITECTURE.md, "Directory leases", "Attribute
// caps" and "Recalling buffered writes"): a change to a directory first
// revokes every other holder's lease and attribute cap and waits for the
// acknowledgements (or for them to run out); a change to any inode (its
// attributes, xattrs, links, data size, or an open of it for writing) first
// revokes every other session's attribute cap on it the same way; an answer
// that shows a file another session holds open for writing first recalls
// that session's buffered writes and waits for its acknowledgement (or
// revoke_timeout_ms); an open that shares a file with a buffering writer
// switches that writer to write-through, and a committed change of a
// shared file's data or size waits for every other opener to drop its
// pages ("Shared files"). Requests wait by returning RequestRun's Wait
// outcome with the predicates below: Leases never blocks.
//
// Contract: a grant is given only to a session with a stream (its revokes
// could not reach it otherwise); a revoke is sent at most once per lease or
// cap; a recall (session, ino) is outstanding at most once; writers() is
// exactly the sessions whose opens_write count of the file is positive; no
// session holds a live attribute cap on a file another session holds open
// for writing (that session's buffered size and mtime are not the MDS's:
// CheckCaps, which the simulation asserts after every step).
//
// Not thread-safe: the rank's mutex guards it (MdsRank::mu_); no I/O.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "mds/caps/cap_table.h"
#include "mds/ids.h"
#include "mds/journal/event.h"
#include "mds/reply.h"
#include "mds/request.h"
#include "mds/sessions/sessions.h"
#include "proto/mds_client.pb.h"

namespace weft::mds {

class Leases {
 public:
  using RecallKey = std::pair<uint64_t, uint64_t>;  // (session, ino)

  // `lease` as CapTable's (0: no caps leased: no directory leases, no
  // attribute caps).
  explicit Leases(absl::Duration lease) : caps_(lease) {}

  absl::Duration lease() const { return caps_.lease(); }
  size_t cap_count() const { return caps_.size(); }  // (inode, session) caps kept
  size_t dir_lease_count() const { return caps_.CountWith(caps::kLs); }
  size_t attr_cap_count() const { return caps_.CountWith(caps::kAs); }
  // ---- memory: the caps and leases each session holds, the limit on them
  // and their recall (docs/ARCHITECTURE.md, "Cap memory")
  struct CapLimits {
    size_t max_per_session = 1000000;  // mds_max_caps_per_client (0: no limit)
    size_t recall_max = 30000;         // mds_recall_max_caps: most asked back at once
    absl::Duration recall_interval = absl::Seconds(1);  // per session
  };
  // Estimated memory of one (inode, session) cap.
  static constexpr uint64_t kBytesPerCap = 192;
  void set_cap_limits(const CapLimits& limits) { limits_ = limits; }
  // Caps `session` holds with a leased bit (those that ran out, until the
  // next Expire: the janitor's, every 200 ms): what the limit bounds and
  // recalls ask back; of them those with `Ls` and with `As`. CapsOf: all
  // its caps, its open files' included.
  size_t HeldBy(uint64_t session) const { return caps_.LeasedBy(session); }
  size_t CapsOf(uint64_t session) const { return caps_.HeldBy(session); }
  size_t DirLeasesHeldBy(uint64_t session) const { return caps_.HeldWith(session, caps::kLs); }
  size_t AttrCapsHeldBy(uint64_t session) const { return caps_.HeldWith(session, caps::kAs); }
  // The leased bits `session` holds on `ino` at `now` (tests, the sim).
  uint32_t Held(uint64_t ino, uint64_t session, absl::Time now) const {
    return caps_.Held(ino, session, now);
  }
  uint64_t EstimatedBytes() const { return caps_.size() * kBytesPerCap; }
  // Asks sessions for caps and leases back (LeaseEvent.recall_caps), at most
  // once per recall_interval each and at most recall_max at a time: every
  // session above 90 % of max_per_session down to 80 % of it, and with
  // `pressure` (the rank's cache and these tables over its memory limit)
  // every session holding more than kRecallFloor a quarter of what it holds.
  void RecallForMemory(absl::Time now, bool pressure);
  static constexpr size_t kRecallFloor = 1000;
  struct CapCounters {
    uint64_t granted = 0;   // new caps and leases (not refreshes)
    uint64_t refused = 0;   // new ones refused: the session was at its limit
    uint64_t recalled = 0;  // asked back for memory
    uint64_t released = 0;  // given back for those recalls
  };
  CapCounters counters() const {
    return {caps_.added_total(), caps_.refused_total(), recalled_total_, released_total_};
  }

  // ---- streams
  // Registers a new stream for `session` (an older stream of it ends: its
  // next TakeEvents fails), drops what the session held (its client dropped
  // everything when the old stream broke) and queues the hello. Returns the
  // stream's generation.
  uint64_t OpenStream(SessionId session);
  bool HasStream(SessionId session) const { return streams_.contains(session.value()); }
  // Whether stream `gen` of `session` still stands; its queued events then
  // move to *out (possibly none).
  bool TakeEvents(SessionId session, uint64_t gen, std::deque<pb::LeaseEvent>* out);
  // Whether stream `gen` of `session` has events queued or ended (a waiter's
  // predicate).
  bool StreamReady(SessionId session, uint64_t gen) const;
  // Stream `gen` ended: its leases stay until acknowledged or run out (the
  // client may not know yet), its recalls can no longer be answered.
  void CloseStream(SessionId session, uint64_t gen);
  // The session is gone: its stream, caps (its opens' too) and recalls.
  void DropSession(SessionId session);

  // ---- directory leases
  // Before `request` changes directories: revokes (queues the events of)
  // every other holder's lease and attribute cap on them. True while any
  // that must go is still alive; *until then gets the time the last of them
  // runs out (min-ed).
  bool Revoke(const Request& request, absl::Time now, absl::Time* until);
  // Bumped whenever a lease goes: what a request waiting in Revoke watches.
  uint64_t returns() const { return returns_; }
  // The leases `done` (the reply to `request`, or a lookup's ENOENT) grants.
  void Grant(const Request& request, const Reply& done, absl::Time now,
             std::vector<DirLeaseGrant>* out);
  // `session`'s heartbeat reached the MDS at `now`: its leases and caps
  // not being revoked live on (CapTable::Renew). Returns its lease
  // stream and the events queued on it so far (the hello included): the
  // client extends its trust only once it has taken that many, so that a
  // revoke queued before this renewal is never overtaken by it. Nothing is
  // renewed for a session without a stream (its client trusts nothing), nor
  // for one that has not answered a recall for memory within a lease.
  struct Renewal {
    uint64_t stream = 0;  // 0: none
    uint64_t events = 0;
  };
  Renewal Renew(SessionId session, absl::Time now);
  void Expire(absl::Time now) { caps_.Expire(now); }

  // ---- attribute caps (of every inode: a directory's are separate from its
  // lease, which stands for its names; Revoke above takes both back before a
  // change in the directory)
  // Before the change of `session` to `changed` stands (the inodes an
  // operation edits or removes, and a file it opens for writing): revokes
  // (queues the events of) every other session's cap on them. True while
  // any cap that must go is still alive; *until as Revoke's.
  bool RevokeAttrs(SessionId session, const std::vector<uint64_t>& changed, absl::Time now,
                   absl::Time* until);
  // Grants `session` the caps of the inodes `done` shows (its attr, a
  // rename's replaced inode, the directories it changed, readdir's entries)
  // that no other session holds open for writing, into done->attr_caps.
  void GrantAttrs(SessionId session, Reply* done, absl::Time now);
  // The contract's invariants on the caps alive at `now` (and no session
  // over CapLimits::max_per_session): OK, or what broke it.
  absl::Status CheckCaps(absl::Time now) const;

  // ---- openers, writers and recalls
  // Keeps the session's file caps on `ino` in step with `state`'s opens and
  // opens_write of it (wanted Fr, Fw; state may be null: the session is
  // gone): CapTable::SetWanted.
  void NoteOpen(SessionId session, uint64_t ino, const SessionState* state);
  // The same for an open a session reclaims after a restart (Reconnect).
  void Reclaimed(SessionId session, uint64_t ino, const SessionState* state);
  bool HasWriters() const { return caps_.AnyWriter(); }
  // What `session` holds of `ino` (tests, the sim, status).
  uint32_t Issued(uint64_t ino, uint64_t session) const { return caps_.Issued(ino, session); }
  // An open of `ino` by `session` is in progress (from its first look at
  // the file to its end, counted or failed): no other session that writes
  // the file may buffer meanwhile (BufferFor), since the open, once
  // counted, shares the file; whoever buffers when it is counted would not
  // be recalled. Each Opening is ended by one EndOpening.
  void Opening(SessionId session, uint64_t ino);
  void EndOpening(SessionId session, uint64_t ino);
  // Before an answer to `request` that shows, or looked at, files another
  // session holds open for writing (`reply` and `touched`: ShownInos):
  // recalls that session's buffered writes, and asks the writers of files in
  // `trims` (the request's truncates) to hold their writes until released.
  // `recalled` and `held` are the request's memory across its runs (no
  // recall twice, a hold once). Returns the recalls the request must wait
  // for (empty: none). A flush's own report, a release, a sync, an atime
  // report and an inline move recall nothing.
  std::vector<RecallKey> Recall(const Request& request, const Reply& reply,
                                const std::vector<uint64_t>& touched,
                                const std::vector<Cut>& trims, const Sessions& sessions,
                                absl::flat_hash_set<RecallKey>* recalled,
                                absl::flat_hash_set<RecallKey>* held);
  // Whether every recall of `wanted` was acknowledged.
  bool Answered(const std::vector<RecallKey>& wanted) const;
  // The sessions of `wanted` whose recall (or, with `invals`, invalidation)
  // is still unanswered.
  std::vector<SessionId> Unanswered(const std::vector<RecallKey>& wanted, bool invals) const;
  // A waiter gave up on them (the client stopped answering).
  void ForgetRecalls(const std::vector<RecallKey>& wanted);
  // Whether a create's reply may carry attr_authority (MetaReply).
  bool MayGrantAttrAuthority(const Request& request, const Reply& reply,
                             const Sessions& sessions) const;
  // ---- shared files (MetaReply.write_through)
  // After an open of `ino` by `session` was counted: whether the session
  // must write the file through (another session holds it open and someone
  // writes it), with the seq that orders this answer against recalls. A
  // writer told to buffer counts as buffering from now on (recalled by
  // lookers); one told to write through is not recalled again.
  std::pair<bool, uint64_t> BufferFor(SessionId session, uint64_t ino);
  // After `request` committed a change of a file's data or size (a write
  // report, a truncate): asks every other session holding the file open to
  // drop its cached pages (LeaseEvent.inval), telling it the file's size
  // after the change (and its last byte when `reply` shows it). Returns
  // what to wait for.
  std::vector<RecallKey> Invalidate(const Request& request, const Reply& reply);
  bool Invalidated(const std::vector<RecallKey>& wanted) const;
  void ForgetInvals(const std::vector<RecallKey>& wanted);
  // Whether `session` may be buffering writes to `ino` (tests).
  bool MayBuffer(uint64_t session, uint64_t ino) const;
  // The client's acknowledgements of revokes and recalls.
  void Ack(SessionId session, const pb::LeaseAckRequest& request);

  // ---- holds (a truncate's writers)
  // A request that held these writers ended.
  void EndHolds(const absl::flat_hash_set<RecallKey>& held);
  // Sends the release to the writers held for `ino` when no request wants
  // them held (and the caller knows no cut of the file is pending).
  void MaybeReleaseHolds(uint64_t ino);
  bool HoldWanted(uint64_t ino) const { return hold_requests_.contains(ino); }

 private:
  struct Stream {
    uint64_t gen = 0;                  // which OpenStream call owns it
    std::deque<pb::LeaseEvent> queue;  // events not yet written
    uint64_t events = 0;               // events ever queued on it
  };
  void Send(uint64_t session, const pb::LeaseEvent& event);
  // Queues `revokes` on their sessions' streams.
  void SendRevokes(const std::vector<CapTable::Revoke>& revokes);
  // What `session` may still be granted anew (SIZE_MAX: no limit).
  size_t Room(uint64_t session) const;
  void DropSessionRecalls(uint64_t session);

  // Whether a session other than `session` holds `ino` open for writing.
  bool OtherWriter(uint64_t session, uint64_t ino) const;

  CapTable caps_;  // every cap: Ls, As Fs leased; Fr Fc Fw Fb Fx of opens
  CapLimits limits_;
  absl::flat_hash_map<uint64_t, absl::Time> recalled_at_;  // session -> last recall
  // session -> its first recall for memory that nothing was given back for
  // since: not renewed once it is older than a lease (Renew).
  absl::flat_hash_map<uint64_t, absl::Time> unanswered_recall_;
  uint64_t recalled_total_ = 0;
  uint64_t released_total_ = 0;
  absl::flat_hash_map<uint64_t, Stream> streams_;
  uint64_t stream_gen_ = 0;
  uint64_t returns_ = 0;
  absl::flat_hash_map<RecallKey, uint64_t> recalls_;  // -> seq
  uint64_t next_recall_seq_ = 0;
  absl::flat_hash_map<RecallKey, uint64_t> invals_;  // -> seq
  // ino -> sessions with an open of it in progress, and how many.
  absl::flat_hash_map<uint64_t, absl::flat_hash_map<uint64_t, int>> opening_;
  // Truncates: the sessions holding a file's writes, and how many holds of
  // each file requests asked for and have not ended.
  absl::flat_hash_map<uint64_t, absl::flat_hash_set<uint64_t>> holds_;
  absl::flat_hash_map<uint64_t, int> hold_requests_;
};

// The inodes an operation's reply shows (its attr, readdir's entries) and
// those it looked at (`touched`).
std::vector<uint64_t> ShownInos(const Reply& reply, const std::vector<uint64_t>& touched);
// The file `request` opens (an open, a create with open; `reply` is its
// answer so far), 0: none.
uint64_t OpenedBy(const Request& request, const Reply& reply);

}  // namespace weft::mds
