#include "mds/ops/op_context.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "common/fs/attr_wire.h"
#include "common/log/log.h"
#include "common/posix/acl.h"
#include "common/status/status.h"

namespace weft::mds {
namespace {
constexpr absl::string_view kNeedLoadPayload = "weft/need-load";
constexpr absl::string_view kNeedMovePayload = "weft/need-move";

// A status that tells the rank to do I/O outside its lock and run the
// operation again, marked by `payload`.
absl::Status RunAgain(absl::string_view payload, absl::string_view message) {
  absl::Status status(absl::StatusCode::kUnavailable, message);
  status.SetPayload(payload, absl::Cord("1"));
  return status;
}

}  // namespace

absl::Status NeedLoad() { return RunAgain(kNeedLoadPayload, "metadata not cached"); }
bool IsNeedLoad(const absl::Status& status) {
  return status.GetPayload(kNeedLoadPayload).has_value();
}

absl::Status NeedMove() { return RunAgain(kNeedMovePayload, "inline data to move"); }
bool IsNeedMove(const absl::Status& status) {
  return status.GetPayload(kNeedMovePayload).has_value();
}

absl::Status Err(int err, absl::string_view message) { return ::weft::ErrnoToStatus(err, message); }

OpContext::OpContext(OpEnv env, MetaCache* cache, const Sessions* sessions,
                     const Request& request, int64_t now_ns)
    : env_(env),
      cache_(cache),
      sessions_(sessions),
      cred_(request.cred),
      umask_(request.umask),
      session_(request.session),
      now_ns_(now_ns) {}

Capacity OpContext::capacity() { return env_.env->capacity(); }
DataPools OpContext::data_pools() { return env_.env->data_pools(); }
bool OpContext::cluster_full() { return env_.env->cluster_full(); }

absl::StatusOr<const mds::Inode*> OpContext::Inode(InodeId id) {
  const uint64_t ino = id.value();
  if (std::find(touched_.begin(), touched_.end(), ino) == touched_.end()) touched_.push_back(ino);
  auto e = edits_.find(ino);
  if (e != edits_.end()) return &e->second;
  if (std::find(removed_.begin(), removed_.end(), ino) != removed_.end() ||
      cache_->InodeRemoved(ino) || ino == 0) {
    return Err(ESTALE, absl::StrCat("inode ", ino));
  }
  if (CInode* inode = cache_->Inode(ino)) return &inode->inode;
  load_inodes_.push_back(ino);
  return NeedLoad();
}

absl::StatusOr<const mds::Inode*> OpContext::Dir(InodeId ino) {
  ASSIGN_OR_RETURN(const mds::Inode* rec, Inode(ino));
  if (!IsDir(*rec)) return Err(ENOTDIR, absl::StrCat("inode ", ino.value()));
  return rec;
}

absl::StatusOr<std::optional<CDentry>> OpContext::Dentry(InodeId id, const std::string& name) {
  const uint64_t dir = id.value();
  for (const auto& d : linked_) {
    if (d.dir == id && d.name == name) return std::optional<CDentry>(CDentry{d.ino, d.type});
  }
  for (const auto& d : unlinked_) {
    if (d.dir == id && d.name == name) return std::optional<CDentry>();
  }
  bool known = false;
  const CDentry* found = cache_->Lookup(dir, name, &known);
  if (found != nullptr) return std::optional<CDentry>(*found);
  if (known) return std::optional<CDentry>();
  ASSIGN_OR_RETURN(const mds::Inode* rec, Dir(id));
  std::vector<Frag> frags(rec->frags.begin(), rec->frags.end());
  load_frags_.emplace_back(dir, FragFor(frags, NameHash(name)));
  return NeedLoad();
}

absl::Status OpContext::LoadAllFrags(InodeId id) {
  const uint64_t dir = id.value();
  ASSIGN_OR_RETURN(const mds::Inode* rec, Dir(id));
  bool missing = false;
  for (Frag f : SortedFrags({rec->frags.begin(), rec->frags.end()})) {
    if (!cache_->FragLoaded(dir, f)) {
      load_frags_.emplace_back(dir, f);
      missing = true;
    }
  }
  return missing ? NeedLoad() : absl::OkStatus();
}

absl::Status OpContext::LoadFrag(InodeId dir, Frag frag) {
  load_frags_.emplace_back(dir.value(), frag);
  return NeedLoad();
}

absl::Status OpContext::CheckEmpty(InodeId id) {
  const uint64_t dir = id.value();
  RETURN_IF_ERROR(LoadAllFrags(id));
  CDir* d = cache_->Dir(dir);
  size_t count = d->entries.size();
  for (const auto& l : linked_) count += l.dir == id;
  for (const auto& u : unlinked_) count -= u.dir == id;
  if (count > 0) return Err(ENOTEMPTY, absl::StrCat("directory ", dir));
  return absl::OkStatus();
}

absl::StatusOr<const std::string*> OpContext::InlineData(const mds::Inode& rec) {
  if (rec.inline_data) return &*rec.inline_data;
  load_inline_.push_back(rec.ino.value());
  return NeedLoad();
}

absl::Status OpContext::MoveInline(InlineMove move) {
  move_ = std::move(move);
  return NeedMove();
}

mds::Inode* OpContext::Edit(const mds::Inode& current) {
  DCHECK(current.ino.value() != 0 &&
         std::find(removed_.begin(), removed_.end(), current.ino.value()) == removed_.end())
      << "inode " << current.ino.value() << " edited after this operation removed it";
  auto [it, inserted] = edits_.try_emplace(current.ino.value(), current);
  if (inserted) it->second.version = current.version + 1;
  return &it->second;
}

mds::Inode* OpContext::NewInode(uint32_t mode, uint32_t uid, uint32_t gid) {
  if (next_ino_ == 0) next_ino_ = cache_->next_ino();
  mds::Inode rec;
  if (reuse_ino_ != 0 && cache_->Inode(reuse_ino_) == nullptr &&
      !cache_->InodeRemoved(reuse_ino_) && !edits_.contains(reuse_ino_)) {
    rec.ino = InodeId(reuse_ino_);
    next_ino_ = std::max(next_ino_, reuse_ino_ + 1);
  } else {
    rec.ino = InodeId(next_ino_++);
  }
  reuse_ino_ = 0;
  rec.mode = mode;
  rec.uid = uid;
  rec.gid = gid;
  rec.nlink = IsDir(rec) ? 2 : 1;
  rec.atime_ns = now_ns_;
  rec.mtime_ns = now_ns_;
  rec.ctime_ns = now_ns_;
  rec.btime_ns = now_ns_;
  rec.version = 1;
  rec.generation = 1;
  if (IsDir(rec)) new_dirs_.push_back(rec.ino.value());
  auto [it, inserted] = edits_.emplace(rec.ino.value(), std::move(rec));
  return &it->second;
}

void OpContext::RemoveInode(InodeId ino) {
  edits_.erase(ino.value());
  removed_.push_back(ino.value());
}

void OpContext::LinkDentry(InodeId id, const std::string& name, const mds::Inode& target) {
  const uint64_t dir = id.value();
  DCHECK(dir != 0 && target.ino.value() != 0 && target.ino.value() != dir &&
         ValidateName(name).ok())
      << "link " << dir << "/" << name << " -> " << target.ino.value();
  std::erase_if(unlinked_, [&](const mds::Dentry& d) { return d.dir == id && d.name == name; });
  linked_.push_back(mds::Dentry{id, name, target.ino, DirentType(target.mode)});
}

void OpContext::UnlinkDentry(InodeId id, const std::string& name) {
  std::erase_if(linked_, [&](const mds::Dentry& d) { return d.dir == id && d.name == name; });
  unlinked_.push_back(mds::Dentry{id, name, InodeId(), 0});
}

bool OpContext::HasOpen(InodeId ino, bool write) {
  return replay_ || sessions_->HasOpen(session_, ino.value(), write);
}

bool OpContext::DropLink(mds::Inode* inode) {
  inode->nlink = inode->nlink > 0 ? inode->nlink - 1 : 0;
  inode->ctime_ns = now_ns_;
  if (IsDir(*inode) ? inode->nlink > 1 : inode->nlink > 0) return true;
  if (!IsDir(*inode)) {
    // Open somewhere (this session included): a stray until its last close.
    const SessionId holder =
        sessions_->OtherHolder(inode->ino.value(), SessionId(), /*write=*/false);
    if (holder.value() != 0) {
      inode->nlink = 0;
      stray_add_.push_back(inode->ino.value());
      stray_holders_[inode->ino.value()] = holder.value();
      return true;
    }
  }
  // Data objects exist up to the size the writers reported; a file that
  // never had data, or has it inline, has nothing to purge.
  if (HasDataObjects(*inode)) {
    purge_add_.push_back(Purge{inode->ino, inode->size, inode->layout});
  }
  RemoveInode(inode->ino);
  return false;
}

void OpContext::MaybeSplit(InodeId id) {
  const uint64_t dir = id.value();
  auto rec_or = Inode(id);
  if (!rec_or.ok()) return;
  // Cheap test first: no fragment can be over the limit while the whole
  // directory is not (counting a fragment walks its entries).
  if (cache_->Dir(dir)->entries.size() + 1 <= options().frag_split_entries) return;
  std::vector<Frag> frags((*rec_or)->frags.begin(), (*rec_or)->frags.end());
  for (const auto& l : linked_) {
    if (l.dir != id) continue;
    Frag f = FragFor(frags, NameHash(l.name));
    if (!cache_->FragLoaded(dir, f) || FragBits(f) >= 24) continue;
    if (cache_->FragCount(dir, f) + 1 <= options().frag_split_entries) continue;
    mds::Inode* edit = Edit(**rec_or);
    std::vector<Frag> next = SortedFrags(frags);
    std::erase(next, f);
    auto [a, b] = SplitFrag(f);
    next.push_back(a);
    next.push_back(b);
    edit->frags.clear();
    for (Frag n : SortedFrags(next)) edit->frags.push_back(n);
    splits_.push_back(FragSplit{id, f});
    CDir* d = cache_->Dir(dir);
    for (auto it = d->by_hash.lower_bound(FragStart(f));
         it != d->by_hash.end() && it->first < FragEnd(f); ++it) {
      bool gone = false;
      for (const auto& u : unlinked_) gone |= (u.dir == id && u.name == it->second);
      if (gone) continue;
      const CDentry& e = d->entries.at(it->second);
      split_entries_.push_back(mds::Dentry{id, it->second, e.ino, e.type});
    }
    return;
  }
}

void OpContext::RStat(InodeId dir, int64_t bytes, int64_t files, int64_t subdirs) {
  RStatDelta delta;
  delta.rbytes = bytes;
  delta.rfiles = files;
  delta.rsubdirs = subdirs;
  delta.rctime_ns = now_ns_;
  rstat_deltas_.emplace_back(dir.value(), delta);
}

void OpContext::TrimObjects(const mds::Inode& inode, uint64_t keep) {
  if (keep >= inode.size || !HasDataObjects(inode)) return;
  trim_add_.push_back(Cut{inode.ino, keep, inode.size, inode.layout});
}

bool OpContext::Finish(Event* event) {
  // What the event says must hold together: an edited inode is not also
  // removed, and no new name points at a removed inode (an orphan dentry).
  if (log::DebugChecks()) {
    for (uint64_t ino : removed_) {
      DCHECK(!edits_.contains(ino)) << "inode " << ino << " both edited and removed";
    }
    for (const mds::Dentry& d : linked_) {
      DCHECK(std::find(removed_.begin(), removed_.end(), d.ino.value()) == removed_.end())
          << "dentry " << d.dir << "/" << d.name << " names removed inode " << d.ino;
    }
    for (const auto& [ino, rec] : edits_) {
      DCHECK(rec.ino.value() == ino && (!IsDir(rec) || rec.nlink >= 2 || rec.nlink == 0))
          << "inode " << ino << " edited into " << rec.ino.value() << " nlink " << rec.nlink;
    }
  }
  const bool changed = !edits_.empty() || !removed_.empty() || !linked_.empty() ||
                       !unlinked_.empty() || !stray_add_.empty() || !purge_add_.empty() ||
                       !trim_add_.empty();
  event->op = op_;
  event->inodes.reserve(event->inodes.size() + edits_.size());
  for (auto& [ino, rec] : edits_) {
    if (std::find(inline_changed_.begin(), inline_changed_.end(), ino) == inline_changed_.end()) {
      rec.inline_data.reset();  // unchanged: the cache keeps its copy (MetaCache::Apply)
    }
    event->inodes.push_back(std::move(rec));
  }
  for (uint64_t ino : removed_) event->removed_inodes.emplace_back(ino);
  event->splits = std::move(splits_);
  event->removed_dentries = std::move(unlinked_);
  event->dentries = std::move(split_entries_);
  event->dentries.insert(event->dentries.end(), std::make_move_iterator(linked_.begin()),
                         std::make_move_iterator(linked_.end()));
  if (next_ino_ != 0) event->next_ino = next_ino_;
  for (uint64_t ino : stray_add_) {
    auto h = stray_holders_.find(ino);
    event->strays_added.push_back(
        Stray{InodeId(ino), SessionId(h == stray_holders_.end() ? 0 : h->second)});
  }
  for (uint64_t ino : stray_remove_) event->strays_removed.emplace_back(ino);
  event->purges_added = std::move(purge_add_);
  event->cuts_added = trim_add_;  // trim_add() stays for the trim phase
  for (const auto& [dir, d] : rstat_deltas_) {
    event->rstat_changes.push_back(RStatChange{InodeId(dir), d});
  }
  for (const auto& [dir, parent] : rstat_moves_) {
    event->rstat_moves.push_back(RStatMove{InodeId(dir), InodeId(parent)});
  }
  edits_.clear();
  return changed;
}

std::vector<uint64_t> OpContext::changed() const {
  std::vector<uint64_t> out;
  out.reserve(edits_.size() + removed_.size() + 1);
  for (const auto& [ino, rec] : edits_) out.push_back(ino);
  out.insert(out.end(), removed_.begin(), removed_.end());
  if (open_ref_ && open_write_) out.push_back(*open_ref_);
  return out;
}

const std::string* FindXattr(const mds::Inode& rec, absl::string_view name) {
  for (const Xattr& x : rec.xattrs) {
    if (x.name == name) return &x.value;
  }
  return nullptr;
}

void SetXattr(mds::Inode* rec, absl::string_view name, std::string value) {
  for (Xattr& x : rec->xattrs) {
    if (x.name == name) {
      x.value = std::move(value);
      return;
    }
  }
  rec->xattrs.push_back(Xattr{std::string(name), std::move(value)});
}

bool RemoveXattr(mds::Inode* rec, absl::string_view name) {
  auto it = std::find_if(rec->xattrs.begin(), rec->xattrs.end(),
                         [&](const Xattr& x) { return x.name == name; });
  if (it == rec->xattrs.end()) return false;
  rec->xattrs.erase(it);
  return true;
}

AccessAttrs AccessOf(const mds::Inode& rec) {
  AccessAttrs a;
  a.mode = rec.mode;
  a.uid = rec.uid;
  a.gid = rec.gid;
  if (const std::string* acl = FindXattr(rec, posix::kXattrPosixAclAccess)) a.acl_access = *acl;
  return a;
}

std::string DefaultAcl(const mds::Inode& rec) {
  const std::string* acl = FindXattr(rec, posix::kXattrPosixAclDefault);
  return acl == nullptr ? std::string() : *acl;
}

void FillAttr(const mds::Inode& rec, fs::Attr* attr) {
  *attr = fs::Attr();
  attr->ino = rec.ino.value();
  attr->mode = rec.mode;
  attr->uid = rec.uid;
  attr->gid = rec.gid;
  attr->size = rec.size;
  attr->allocated = rec.allocated ? std::min(*rec.allocated, rec.size) : rec.size;
  attr->nlink = rec.nlink;
  attr->rdev = rec.rdev;
  attr->atime_ns = rec.atime_ns;
  attr->mtime_ns = rec.mtime_ns;
  attr->ctime_ns = rec.ctime_ns;
  attr->btime_ns = rec.btime_ns;
  attr->version = rec.version;
  attr->generation = rec.generation;
  attr->layout = rec.layout;
  attr->data_inline = rec.data_inline;
  attr->no_xattrs = rec.xattrs.empty();
  const std::string* acl = FindXattr(rec, posix::kXattrPosixAclAccess);
  attr->no_acl = acl == nullptr;
  if (S_ISDIR(rec.mode)) {
    attr->searchable_by_all =
        posix::SearchableByEveryone(rec.mode, acl == nullptr ? std::string() : *acl);
  }
}

}  // namespace weft::mds
