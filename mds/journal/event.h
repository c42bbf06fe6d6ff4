// A journal event as the metadata core makes and applies it: the complete
// new values of everything one operation (or a background pass) changed, as
// plain values with strong ids. Ops fill one through OpContext::Finish, the
// rank's background passes directly; MdsRank::CommitLocked applies it to the
// cache and the sessions and hands it to the journal, which encodes it
// (EventRecord); replay decodes each stored event (EventOf) and applies it
// the same way. The stored record is mds/store/records.proto's JournalEvent,
// unchanged: journals written before read as they were.
//
// Redo records: replay is idempotent and order alone matters. Contract (what
// EventOf refuses as DataLoss, and OpContext::Finish DCHECKs): every inode,
// purge and cut names an inode; every dentry names its directory and a
// name, and a linked one its target.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/fs/attr.h"
#include "mds/ids.h"
#include "mds/inode.h"
#include "mds/store/records.pb.h"

namespace weft::mds {

// A directory entry: `name` in `dir` names `ino`, of type `type` (DT_*).
// In Event::removed_dentries only dir and name count.
struct Dentry {
  InodeId dir;
  std::string name;
  InodeId ino;
  uint32_t type = 0;
  bool operator==(const Dentry&) const = default;
};

// A session's durable header (its completed replies travel on their own).
struct SessionHeader {
  SessionId id;
  std::string client;       // the client's self-chosen name
  int64_t opened_ms = 0;
  bool closed = false;      // the session goes
  std::string osd_client;   // its object client's name (what eviction blocklists)
  bool operator==(const SessionHeader&) const = default;
};

// An unlinked inode still open: kept until `holder` (the first session
// found holding it) or the last other holder releases it.
struct Stray {
  InodeId ino;
  SessionId holder;
  bool operator==(const Stray&) const = default;
};

// A removed file's data objects, to delete: up to `size` bytes in `layout`.
struct Purge {
  InodeId ino;
  uint64_t size = 0;
  fs::FileLayout layout;
  bool operator==(const Purge&) const = default;
};

// A truncate's cut of the data objects, pending until done: the objects may
// hold bytes in [keep, size) of the file, which must go before anyone writes
// the file again (RequestRun's trim phase, MdsRank::RunTrim). Named Cut, not
// Trim: MetaCache::Trim is the cache's own eviction.
struct Cut {
  InodeId ino;
  uint64_t keep = 0;
  uint64_t size = 0;
  fs::FileLayout layout;
  bool operator==(const Cut&) const = default;
};

// A directory fragment split in two (its entries are in Event::dentries).
struct FragSplit {
  InodeId dir;
  uint32_t frag = 0;  // (bits << 24) | value, as Inode::frags
  bool operator==(const FragSplit&) const = default;
};

// A subtree statistics change of `dir`, still to propagate up its tree.
struct RStatChange {
  InodeId dir;
  RStatDelta delta;
  bool operator==(const RStatChange&) const = default;
};

// Directory `from` was removed: what it had pending goes to `to`, its parent.
struct RStatMove {
  InodeId from;
  InodeId to;
  bool operator==(const RStatMove&) const = default;
};

struct Event {
  uint64_t seq = 0;   // set by MdsRank::CommitLocked
  std::string op;     // what produced it, for `weft fs journal inspect`
  // Upserted inodes. An inode's inline_data is present only where the event
  // changed the bytes; absent, the cache keeps its copy.
  std::vector<Inode> inodes;
  std::vector<InodeId> removed_inodes;
  std::vector<Dentry> dentries;          // upserts
  std::vector<Dentry> removed_dentries;  // dir + name
  uint64_t next_ino = 0;                 // allocator high-water mark after it (0: unchanged)
  std::vector<SessionHeader> sessions;   // opened, changed or closed sessions
  // The request it completed, if remembered (tid != 0): a retry is answered
  // with `reply` (the kept encoding, mds/reply.h KeptReply); the session's
  // completed requests below `oldest_tid` may go.
  SessionId session;
  RequestId tid;
  std::string reply;
  RequestId oldest_tid;
  std::vector<Stray> strays_added;
  std::vector<InodeId> strays_removed;
  std::vector<Purge> purges_added;
  std::vector<InodeId> purges_done;
  std::vector<FragSplit> splits;
  std::vector<Cut> cuts_added;
  std::vector<InodeId> cuts_done;
  // Recursive statistics this event changed (pending until propagated), the
  // pending changes of directories it removed, and whether it wrote every
  // pending change into the directories' inodes.
  std::vector<RStatChange> rstat_changes;
  std::vector<RStatMove> rstat_moves;
  bool rstat_propagated = false;

  bool operator==(const Event&) const = default;
};

// The stored record and back. EventOf refuses (DataLoss) a record that
// breaks the contract above: a journal that says so is corrupt, and replay
// must stop rather than build a cache from it.
pb::JournalEvent EventRecord(const Event& event);
absl::StatusOr<Event> EventOf(const pb::JournalEvent& record);

// The tables' records (mds/store's "purge" and "trims" objects).
pb::PurgeRec PurgeRecord(const Purge& purge);
absl::StatusOr<Purge> PurgeOf(const pb::PurgeRec& record);
pb::TrimRec CutRecord(const Cut& cut);
absl::StatusOr<Cut> CutOf(const pb::TrimRec& record);

}  // namespace weft::mds
