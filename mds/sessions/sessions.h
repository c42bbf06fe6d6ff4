// The client sessions of a rank: which exist, what each holds open, and the
// replies of each one's completed requests, so that a retried request is
// answered again rather than applied twice.
//
// What is durable: a session's header (id, client name, OSD identity, opened
// time) and its completed replies travel in journal events
// (Event::sessions, and .session/.tid/.reply of the event a request
// produced) and are flushed to
// the "sessions" table object. What is not: open handles and renewal times
// (a restarted rank learns the opens again from each session's Reconnect,
// and gives every session a full timeout to come back).
//
// Contract: Apply() is the only way a session appears, changes its record or
// goes; a session id only grows (next_id); an open count is never negative.
//
// Not thread-safe: the rank's mutex guards it (MdsRank::mu_); no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "mds/ids.h"
#include "mds/journal/event.h"
#include "mds/store/meta_store.h"
#include "mds/store/records.pb.h"

namespace weft::mds {

struct SessionState {
  pb::SessionRec rec;  // completed requests included
  bool dirty = false;
  int64_t last_renew_ms = 0;
  uint64_t cached_inodes = 0;  // as the client's last renewal said
  // Being evicted (MdsRank::Evict): its requests are refused while the rank
  // fences it, before the session is closed.
  bool evicting = false;
  absl::flat_hash_map<uint64_t, uint64_t> completed_seq;  // tid -> journal seq
  absl::flat_hash_map<uint64_t, int> opens;               // ino -> open count
  absl::flat_hash_map<uint64_t, int> opens_write;         // ino -> open for writing
  // Answers of requests that changed only what this rank holds in memory (an
  // open of an existing file: no event, so no completed reply), by tid: a
  // retry after a lost answer gets it again instead of a second handle.
  // Dropped below the client's oldest tid, and with the incarnation (whose
  // successor learns the handles from Reconnect).
  std::map<uint64_t, std::string> answered;
};

class Sessions {
 public:
  Sessions(uint32_t fs, uint32_t rank);

  // nullptr when there is no such session.
  SessionState* Find(SessionId id);
  const SessionState* Find(SessionId id) const;
  // Every session, by id. Iteration order carries no meaning.
  absl::flat_hash_map<SessionId, SessionState>& all() { return sessions_; }
  const absl::flat_hash_map<SessionId, SessionState>& all() const { return sessions_; }
  size_t size() const { return sessions_.size(); }

  // The id the next new session gets, and taking it.
  SessionId next_id() const { return next_id_; }
  SessionId TakeId();

  // Applies the session parts of a journal event (live or replayed): new or
  // changed headers, closed sessions, and the reply of a completed request
  // (dropping those below the client's oldest unanswered tid).
  void Apply(const Event& event);

  // Whether `session` holds `ino` open (for writing, with `write`).
  bool HasOpen(SessionId session, uint64_t ino, bool write) const;
  // The lowest-numbered session other than `except` holding `ino` open (for
  // writing, with `write`); 0 (no session) when none.
  SessionId OtherHolder(uint64_t ino, SessionId except, bool write) const;
  // One more handle of `ino` in `session` (which must exist).
  void Opened(SessionId session, uint64_t ino, bool write);
  // Keeps the answer of request `tid`, which changed only memory (see
  // SessionState::answered), and forgets those below `oldest`.
  void Answered(SessionId session, RequestId tid, RequestId oldest, std::string reply);

  // The changed and closed rows, as an update of the table object.
  void TakeDirty(FlushBatch* batch);
  // Restores the table at start (before replay).
  void LoadTable(const std::map<std::string, std::string>& rows);

 private:
  const uint32_t fs_;
  const uint32_t rank_;
  SessionId next_id_;
  absl::flat_hash_map<SessionId, SessionState> sessions_;
  std::set<SessionId> closed_;  // to delete from the table
};

// The key of a session's row in the "sessions" table.
std::string SessionKey(SessionId id);

}  // namespace weft::mds
