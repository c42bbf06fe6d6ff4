// What an operation sees: the cache (under the rank's lock), the caller's
// credentials, and the event it is building. Operations run whole: they read
// through the context, which reports anything not cached as a load to do
// (the operation then returns kNeedLoad and is run again once it is loaded),
// and they only describe their changes in the event, which the rank applies
// at once after the operation returned OK.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/posix/permission.h"
#include "mds/cache/meta_cache.h"
#include "mds/journal/event.h"
#include "mds/rank_options.h"
#include "mds/reply.h"
#include "mds/request.h"
#include "mds/sessions/sessions.h"
#include "proto/mds_client.pb.h"

namespace weft::mds {

// The POSIX permission rules (common/posix), shared with the client.
using namespace ::weft::posix;  // NOLINT(build/namespaces)

// The status an operation returns when the context asked for loads.
absl::Status NeedLoad();
bool IsNeedLoad(const absl::Status& status);
// The status an operation returns when it asked for the move of a file's
// inline data to its first object (OpContext::MoveInline).
absl::Status NeedMove();
bool IsNeedMove(const absl::Status& status);

// errno-carrying errors, shorthand for operations.
absl::Status Err(int err, absl::string_view message);

// What an operation may ask of the rank around it, under its lock, without I/O.
struct OpEnv {
  const RankOptions* options = nullptr;
  const RankEnv* env = nullptr;  // capacity, data pools, a full cluster
};

class OpContext {
 public:
  OpContext(OpEnv env, MetaCache* cache, const Sessions* sessions, const Request& request,
            int64_t now_ns);

  const Credentials& cred() const { return cred_; }
  uint32_t umask() const { return umask_; }
  int64_t now_ns() const { return now_ns_; }
  // A resent request (Reconnect): its first new inode gets number `ino` again,
  // unless something else holds it now.
  void ReuseIno(InodeId ino) { reuse_ino_ = ino.value(); }
  // A resent request, checked against the session's open files when it was
  // first answered: the session may have closed them since (a write report,
  // then the release, then the restart lost the report), so HasOpen holds.
  void SetReplay() { replay_ = true; }
  SessionId session() const { return session_; }
  MetaCache* cache() { return cache_; }
  const Sessions& sessions() const { return *sessions_; }
  const RankOptions& options() const { return *env_.options; }
  Capacity capacity();
  // The filesystem's data pools and every pool's name, as the maps are now.
  DataPools data_pools();
  // An OSD is past the full ratio: new data is refused (ENOSPC).
  bool cluster_full();

  // The inode (its pending new value if this operation changed it), or
  // NeedLoad, or ESTALE when it does not exist.
  absl::StatusOr<const mds::Inode*> Inode(InodeId ino);
  // Same, ENOTDIR unless a directory.
  absl::StatusOr<const mds::Inode*> Dir(InodeId ino);
  // The entry, nullopt when certainly absent, or NeedLoad.
  absl::StatusOr<std::optional<CDentry>> Dentry(InodeId dir, const std::string& name);
  // OK when the directory has no entries (loads every fragment), ENOTEMPTY.
  absl::Status CheckEmpty(InodeId dir);
  // Every fragment of `dir` loaded, or NeedLoad.
  absl::Status LoadAllFrags(InodeId dir);
  // Asks for one fragment; always NeedLoad.
  absl::Status LoadFrag(InodeId dir, Frag frag);
  // The inline bytes of `rec` (data_inline), or NeedLoad.
  absl::StatusOr<const std::string*> InlineData(const mds::Inode& rec);
  // The operation changed the inline bytes of `ino` (edited): the event
  // carries them. Other events leave them out.
  void InlineChanged(InodeId ino) { inline_changed_.push_back(ino.value()); }
  // Asks the rank to write `move` to the file's first object, outside its
  // lock, and run the operation again; returns NeedMove.
  absl::Status MoveInline(InlineMove move);
  const std::optional<InlineMove>& move() const { return move_; }
  // The inline data moved by this request so far: (ino, inline_version).
  void SetMoved(std::optional<std::pair<uint64_t, uint64_t>> moved) { moved_ = moved; }
  bool Moved(InodeId ino, uint64_t inline_version) const {
    return moved_ && moved_->first == ino.value() && moved_->second == inline_version;
  }
  bool loads_pending() const {
    return !load_inodes_.empty() || !load_frags_.empty() || !load_inline_.empty();
  }
  const std::vector<uint64_t>& load_inline() const { return load_inline_; }
  const std::vector<uint64_t>& load_inodes() const { return load_inodes_; }
  const std::vector<std::pair<uint64_t, Frag>>& load_frags() const { return load_frags_; }

  // Changes. Edit returns the pending copy of an inode (version bumped once).
  mds::Inode* Edit(const mds::Inode& current);
  mds::Inode* NewInode(uint32_t mode, uint32_t uid, uint32_t gid);
  void RemoveInode(InodeId ino);
  void LinkDentry(InodeId dir, const std::string& name, const mds::Inode& target);
  void UnlinkDentry(InodeId dir, const std::string& name);
  // Drops one link of `inode` (already edited): a stray if open, else
  // purged. Returns whether the inode lives on (other links, or open).
  bool DropLink(mds::Inode* inode);
  // Splits the fragment holding `name` if it has grown past the limit.
  void MaybeSplit(InodeId dir);
  void RStat(InodeId dir, int64_t bytes, int64_t files, int64_t subdirs);
  // Directory `dir` goes: what it has pending of recursive statistics goes
  // to `parent` (it was counted there on the way up, or will be).
  void DirRemoved(InodeId dir, InodeId parent) {
    rstat_moves_.emplace_back(dir.value(), parent.value());
  }
  // A truncate of `inode` (as it was before) to `keep` bytes: its objects
  // past `keep` are cut after the event, before the reply (RequestRun's trim phase).
  void TrimObjects(const mds::Inode& inode, uint64_t keep);
  const std::vector<Cut>& trim_add() const { return trim_add_; }
  void OpenRef(InodeId ino, bool write) {
    open_ref_ = ino.value();
    open_write_ = write;
  }
  // Whether this session holds `ino` open (for writing); always for a replay.
  bool HasOpen(InodeId ino, bool write);

  // Moves the pending changes into the event; false when nothing changed.
  bool Finish(Event* event);
  std::optional<uint64_t> open_ref() const { return open_ref_; }
  bool open_write() const { return open_write_; }
  const std::vector<uint64_t>& new_dirs() const { return new_dirs_; }
  const std::vector<std::pair<uint64_t, RStatDelta>>& rstat_deltas() const { return rstat_deltas_; }
  void SetOp(const std::string& op) { op_ = op; }
  // Every inode the operation looked at, in order: another session holding
  // one of them open for writing is recalled before the answer stands.
  const std::vector<uint64_t>& touched() const { return touched_; }
  // Every inode whose attributes the operation changes: edited, removed, or
  // opened for writing (other sessions' attribute caps on them go first).
  std::vector<uint64_t> changed() const;

 private:
  const OpEnv env_;
  MetaCache* const cache_;
  const Sessions* const sessions_;
  const Credentials& cred_;  // the request's, which outlives the context
  const uint32_t umask_;
  const SessionId session_;
  const int64_t now_ns_;
  std::string op_;
  std::vector<uint64_t> load_inodes_;
  std::vector<std::pair<uint64_t, Frag>> load_frags_;
  std::vector<uint64_t> load_inline_;
  std::vector<uint64_t> inline_changed_;
  std::optional<InlineMove> move_;
  std::optional<std::pair<uint64_t, uint64_t>> moved_;
  std::map<uint64_t, mds::Inode> edits_;
  std::vector<uint64_t> removed_;
  std::vector<mds::Dentry> linked_;
  std::vector<mds::Dentry> unlinked_;
  std::vector<FragSplit> splits_;
  std::vector<mds::Dentry> split_entries_;
  std::vector<uint64_t> stray_add_, stray_remove_;
  std::map<uint64_t, uint64_t> stray_holders_;
  std::vector<Purge> purge_add_;
  std::vector<Cut> trim_add_;
  std::vector<uint64_t> new_dirs_;
  std::vector<std::pair<uint64_t, RStatDelta>> rstat_deltas_;
  std::vector<std::pair<uint64_t, uint64_t>> rstat_moves_;  // removed dir -> parent
  uint64_t next_ino_ = 0;
  uint64_t reuse_ino_ = 0;
  bool replay_ = false;
  std::optional<uint64_t> open_ref_;
  bool open_write_ = false;
  std::vector<uint64_t> touched_;
};

// Shared by operations.
// An inode's xattr by name: its value, or null.
const std::string* FindXattr(const mds::Inode& rec, absl::string_view name);
// Sets (adds or replaces) the xattr `name`.
void SetXattr(mds::Inode* rec, absl::string_view name, std::string value);
// Removes the xattr `name`; false if there was none.
bool RemoveXattr(mds::Inode* rec, absl::string_view name);

AccessAttrs AccessOf(const mds::Inode& rec);
std::string DefaultAcl(const mds::Inode& rec);
void FillAttr(const mds::Inode& rec, fs::Attr* attr);
inline bool IsDir(const mds::Inode& rec) { return (rec.mode & 0170000) == 0040000; }
inline bool IsReg(const mds::Inode& rec) { return (rec.mode & 0170000) == 0100000; }
inline bool IsSymlink(const mds::Inode& rec) { return (rec.mode & 0170000) == 0120000; }
inline uint32_t DirentType(uint32_t mode) { return (mode >> 12) & 017; }
// Whether data objects of the file may exist (a purge removes them). A file
// whose data is inline has none: a move to objects that the MDS did not
// record (it stopped between the object write and the event) leaves one
// object behind, a known leak (docs/ARCHITECTURE.md, "Inline data").
inline bool HasDataObjects(const mds::Inode& rec) {
  return IsReg(rec) && rec.size > 0 && !rec.data_inline;
}

}  // namespace weft::mds
