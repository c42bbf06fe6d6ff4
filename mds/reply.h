// What the metadata core answers a request: plain values (common/fs/attr.h's
// attributes and entries), filled by the operations (mds/ops/) and the
// request run, and put on the wire once, by the gRPC adapter (ToWire,
// mds/reply_wire.cc). A retried request is answered from the completed-request
// table, which keeps replies in the wire's encoding (SessionRec.completed,
// JournalEvent.reply), so tables and journals written before read as they
// were: FromWire brings them back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/fs/attr.h"
#include "common/locks/lock_table.h"
#include "mds/ids.h"
#include "proto/mds_client.pb.h"

namespace weft::mds {

// A directory lease granted with a reply (mds/caps/dir_leases.h): the session
// may answer lookups in `dir` from what it knows for `lease_ms`, counted from
// when it sent the request, unless revoked first.
struct DirLeaseGrant {
  InodeId dir;
  uint64_t seq = 0;
  int64_t lease_ms = 0;
  // The request passed the search (x) check on the directory with its
  // credentials: the client may answer the same credentials locally.
  bool searchable = false;
  bool operator==(const DirLeaseGrant&) const = default;
};

// An attribute cap granted with a reply (mds/caps/leases.h): the session may
// answer `stat` of `ino` from what it has for `lease_ms`, counted from when
// it sent the request, unless revoked first.
struct AttrCapGrant {
  InodeId ino;
  uint64_t seq = 0;
  int64_t lease_ms = 0;
  bool operator==(const AttrCapGrant&) const = default;
};

struct Reply {
  // The answer's status; the rest is meaningful only when OK (a failed
  // answer keeps its leases alone: a lookup's ENOENT grants one).
  absl::Status status;

  // ---- what the operation fills
  fs::Attr attr;  // ino 0: none
  std::vector<fs::DirEntry> entries;
  bool eof = false;                     // readdir: nothing after `entries`
  std::string value;                    // readlink target, xattr value
  std::vector<std::string> names;       // listxattr
  std::optional<fs::FsStats> statfs;
  bool created = false;                 // create with open: the name was new
  // A rename: the inode the new name pointed to, after it (see MetaReply).
  fs::Attr replaced;  // ino 0: none (a replaced file that is gone)
  uint64_t prior_size = 0;              // a setattr of the size: the size it replaced
  // The inline bytes of attr.ino at attr.version (open, InlineOp). Never in a
  // reply kept for a retry.
  std::optional<std::string> inline_data;
  bool inline_refused = false;          // WrittenOp.inline_writes not applied
  // Inodes the operation changed besides `attr`, at their new versions:
  // AtimeOp's whose atime it moved, a change of names' directories.
  std::vector<fs::Attr> changed;
  // LockOp GET: answered, with the first conflicting lock (nullopt: none).
  struct LockQuery {
    std::optional<locks::Lock> conflict;
  };
  std::optional<LockQuery> lock_query;
  bool lock_retry = false;              // LockOp SET with wait_ms: ask again

  // ---- what the rank adds
  std::vector<DirLeaseGrant> leases;
  std::vector<AttrCapGrant> attr_caps;
  bool attr_authority = false;  // see MetaReply.attr_authority
  bool write_through = false;   // see MetaReply.write_through
  uint64_t buffer_seq = 0;
  uint64_t append_offset = 0;   // a reservation's (WrittenOp.append)
  bool replayed = false;        // answered from the completed-request table
  bool unsafe = false;          // an early answer: the change is journal seq `seq`
  uint64_t seq = 0;
  uint64_t durable_seq = 0;     // the journal is durable through it
  uint64_t osd_epoch_barrier = 0;  // see MetaReply.osd_epoch_barrier
  uint64_t boot = 0;            // the rank's incarnation
  int64_t time_ns = 0;          // the change's timestamp (for a resend)
};

// The wire's MetaReply; `tid` is the request's. Fields left at their
// defaults stay off the wire, as the MDS sent them before.
void ToWire(const Reply& reply, uint64_t tid, pb::MetaReply* out);
// A reply kept in the wire's encoding (the completed-request table): every
// field back, or InvalidArgument for a lock the table cannot hold.
absl::StatusOr<Reply> FromWire(const pb::MetaReply& wire);

}  // namespace weft::mds
