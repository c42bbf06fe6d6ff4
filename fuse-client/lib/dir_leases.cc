#include "fuse-client/lib/dir_leases.h"

#include <linux/fs.h>  // RENAME_EXCHANGE: the wire carries renameat2's flags
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "absl/time/clock.h"
#include "common/caps/cap_bits.h"
#include "common/posix/acl.h"
#include "common/posix/permission.h"
#include "common/status/status.h"

namespace weft::client {
namespace {

bool SameCreds(const pb::Creds& a, const pb::Creds& b) {
  if (a.uid() != b.uid() || a.gid() != b.gid() || a.groups_size() != b.groups_size()) return false;
  return std::equal(a.groups().begin(), a.groups().end(), b.groups().begin());
}

constexpr size_t kSearchersMax = 8;
// A revoke is remembered this long: a grant that crossed it on the wire
// arrives well before (or is long expired when it does).
constexpr absl::Duration kRevokeMemory = absl::Minutes(2);

// The directory whose permissions (mode, owner, access ACL) request `r`
// changes when it succeeds, 0 if none (an ACL's inode may be a file: its
// reply says nothing of its type, and a file's entry is never trusted).
uint64_t PermissionsChangedBy(const pb::MetaRequest& r, const pb::MetaReply& reply) {
  using R = pb::MetaRequest;
  switch (r.op_case()) {
    case R::kSetattr:
      return (r.setattr().valid() & posix::kSetPermissions) != 0 && S_ISDIR(reply.attr().mode())
                 ? r.setattr().ino()
                 : 0;
    case R::kSetxattr:
      return r.setxattr().name() == posix::kXattrPosixAclAccess ? r.setxattr().ino() : 0;
    case R::kRemovexattr:
      return r.removexattr().name() == posix::kXattrPosixAclAccess ? r.removexattr().ino() : 0;
    default:
      return 0;
  }
}

}  // namespace

uint64_t DirLeases::epoch() {
  absl::MutexLock lock(&mu_);
  return epoch_;
}

void DirLeases::StreamUp(uint64_t stream) {
  absl::MutexLock lock(&mu_);
  ++epoch_;
  up_ = true;
  stream_ = stream;
  taken_ = 1;  // the hello
  renewed_until_ = absl::InfinitePast();
  pending_.reset();
}

void DirLeases::DropAll() {
  absl::MutexLock lock(&mu_);
  ++epoch_;
  up_ = false;
  dirs_.clear();
  attrs_.clear();
  stream_ = 0;
  renewed_until_ = absl::InfinitePast();
  pending_.reset();
}

void DirLeases::TookEvent() {
  absl::MutexLock lock(&mu_);
  ++taken_;
  if (pending_.has_value() && taken_ >= pending_->events) {
    renewed_until_ = std::max(renewed_until_, pending_->until);
    pending_.reset();
  }
}

void DirLeases::Renewed(absl::Time sent, uint64_t epoch, uint64_t stream, uint64_t events,
                        absl::Duration lease) {
  absl::MutexLock lock(&mu_);
  // Another stream (or none), or everything dropped since it was sent: the
  // renewal may not cover what is held now.
  if (stream == 0 || stream != stream_ || epoch != epoch_ || !up_) return;
  const absl::Time until = sent + lease;
  if (taken_ >= events) {
    renewed_until_ = std::max(renewed_until_, until);
  } else if (!pending_.has_value() || pending_->until < until) {
    pending_ = PendingRenewal{std::max(events, pending_ ? pending_->events : 0), until};
  }
}

void DirLeases::ForgetAll() {
  absl::MutexLock lock(&mu_);
  ++epoch_;
  dirs_.clear();
  attrs_.clear();
}

void DirLeases::Forget(Dir* d) {
  d->seq = 0;
  d->complete = false;
  d->names.clear();
  d->absent.clear();
  d->found.clear();
  d->searchers.clear();
}

void DirLeases::ChangedPermissions(uint64_t dir, absl::Time now) {
  // The MDS does not revoke the changer's lease (the names it knows stay
  // true); who may search the directory is asked again. The entry is made
  // even without a lease: a grant answered before the change may arrive
  // after it.
  Dir& d = dirs_[dir];
  d.searchers.clear();
  d.permissions_changed = now;
}

void DirLeases::Revoke(uint64_t ino, uint64_t seq) {
  absl::MutexLock lock(&mu_);
  Dir& d = dirs_[ino];
  d.revoked = std::max(d.revoked, seq);
  d.revoked_at = absl::Now();
  if (d.seq != 0 && d.seq <= seq) Forget(&d);
}

void DirLeases::RevokeAttrs(uint64_t ino, uint64_t seq) {
  absl::MutexLock lock(&mu_);
  AttrCap& a = attrs_[ino];
  a.revoked = std::max(a.revoked, seq);
  a.revoked_at = absl::Now();
  if (a.seq != 0 && a.seq <= seq) a.seq = 0;
}

std::vector<pb::LeaseEvent> DirLeases::GiveBack(size_t n, absl::Time now) {
  absl::MutexLock lock(&mu_);
  // The MDS keeps one cap per inode (Ls and As Fs together): an inode's
  // bits go back together, oldest grant first, under the newest sequence
  // number this client saw for the inode (the cap's; a grant of that
  // number still on the wire is then not taken).
  struct Held {
    absl::Time expires = absl::InfiniteFuture();
    uint64_t seq = 0;
    uint32_t bits = 0;
  };
  absl::flat_hash_map<uint64_t, Held> by_ino;
  for (const auto& [ino, a] : attrs_) {
    if (!TrustedAttrs(a, now)) continue;
    Held& h = by_ino[ino];
    h.expires = std::min(h.expires, a.expires);
    h.seq = std::max(h.seq, a.seq);
    h.bits |= caps::kAttrs;
  }
  for (const auto& [ino, d] : dirs_) {
    if (!Trusted(d, now)) continue;
    Held& h = by_ino[ino];
    h.expires = std::min(h.expires, d.expires);
    h.seq = std::max(h.seq, d.seq);
    h.bits |= caps::kLs;
  }
  std::vector<std::pair<uint64_t, Held>> held(by_ino.begin(), by_ino.end());
  n = std::min(n, held.size());
  std::partial_sort(held.begin(), held.begin() + n, held.end(), [](const auto& x, const auto& y) {
    return x.second.expires < y.second.expires;
  });
  std::vector<pb::LeaseEvent> acks;
  acks.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& [ino, h] = held[i];
    pb::LeaseEvent& e = acks.emplace_back();
    e.set_ino(ino);
    e.set_seq(h.seq);
    e.set_caps(h.bits);
    e.set_released(true);
    // As a revoke: a grant of this seq still on the wire is not taken.
    if (h.bits & caps::kAttrs) {
      AttrCap& a = attrs_[ino];
      a.revoked = std::max(a.revoked, h.seq);
      a.revoked_at = now;
      a.seq = 0;
    }
    if (h.bits & caps::kLs) {
      Dir& d = dirs_[ino];
      d.revoked = std::max(d.revoked, h.seq);
      d.revoked_at = now;
      Forget(&d);
    }
  }
  return acks;
}

absl::Duration DirLeases::AttrRemaining(uint64_t ino, uint64_t version, absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (!up_) return absl::ZeroDuration();
  auto it = attrs_.find(ino);
  if (it == attrs_.end() || !TrustedAttrs(it->second, now) || version < it->second.version) {
    return absl::ZeroDuration();
  }
  return Until(it->second.expires) - now;
}

bool DirLeases::Trusted(const Dir& d, absl::Time now) const {
  return d.seq != 0 && now < Until(d.expires);
}

bool DirLeases::TrustedAttrs(const AttrCap& a, absl::Time now) const {
  return a.seq != 0 && now < Until(a.expires);
}

DirLeases::Dir* DirLeases::Held(uint64_t ino, uint64_t seq, absl::Time now) {
  auto it = dirs_.find(ino);
  if (it == dirs_.end() || it->second.seq != seq || !Trusted(it->second, now)) return nullptr;
  return &it->second;
}

uint64_t DirLeases::SeqIn(const pb::MetaReply& reply, uint64_t ino) {
  for (const pb::DirLease& l : reply.leases()) {
    if (l.ino() == ino) return l.seq();
  }
  return 0;
}

uint64_t DirLeases::VersionIn(const pb::MetaReply& reply, uint64_t ino) {
  if (reply.attr().ino() == ino) return reply.attr().version();
  if (reply.replaced().ino() == ino) return reply.replaced().version();
  for (const pb::Attr& a : reply.changed()) {
    if (a.ino() == ino) return a.version();
  }
  for (const pb::DirEntry& e : reply.entries()) {
    if (e.has_attr() && e.attr().ino() == ino) return e.attr().version();
  }
  return 0;
}

uint64_t DirLeases::InodeKnown(uint64_t dir, const std::string& name) const {
  auto it = dirs_.find(dir);
  if (it == dirs_.end()) return 0;
  const auto& names = it->second.complete ? it->second.names : it->second.found;
  auto n = names.find(name);
  return n != names.end() ? n->second : 0;
}

void DirLeases::Added(uint64_t dir, const std::string& name, uint64_t ino) {
  // A name that exists: always safe to learn, whatever the lease.
  auto it = dirs_.find(dir);
  if (it == dirs_.end()) return;
  Dir& d = it->second;
  d.absent.erase(name);
  if (!d.complete) {
    if (ino == 0) {
      d.found.erase(name);  // there, but which inode is not known
    } else {
      if (d.found.size() >= kAbsentNamesMax) d.found.clear();
      d.found[name] = ino;
    }
    return;
  }
  if (d.names.size() >= kCompleteNamesMax) {
    d.complete = false;  // too big to remember: lookups go to the MDS
    d.names.clear();
    return;
  }
  d.names[name] = ino;
}

void DirLeases::Absent(const pb::MetaReply& reply, uint64_t dir, const std::string& name,
                       absl::Time now) {
  // What was found there is gone, whatever the lease.
  if (auto it = dirs_.find(dir); it != dirs_.end()) it->second.found.erase(name);
  // Absent only under the lease the same reply granted: an older one may
  // have been revoked (and the name created elsewhere) since the MDS answered.
  Dir* d = Held(dir, SeqIn(reply, dir), now);
  if (d == nullptr) return;
  if (d->complete) {
    d->names.erase(name);
    return;
  }
  if (d->absent.size() >= kAbsentNamesMax) d->absent.clear();
  d->absent.insert(name);
}

void DirLeases::Found(const pb::MetaReply& reply, uint64_t dir, const std::string& name,
                      uint64_t ino, absl::Time now) {
  // As Absent: the answer may be older than a revoke of an earlier lease.
  if (ino == 0 || Held(dir, SeqIn(reply, dir), now) == nullptr) return;
  Added(dir, name, ino);
}

void DirLeases::Observe(const pb::MetaRequest& r, const pb::MetaReply& reply,
                        const absl::Status& status, absl::Time sent, uint64_t epoch) {
  absl::MutexLock lock(&mu_);
  if (epoch != epoch_ || !up_) return;
  const absl::Time now = absl::Now();
  for (const pb::DirLease& l : reply.leases()) {
    Dir& d = dirs_[l.ino()];
    if (l.seq() <= d.revoked) continue;  // crossed a revoke on the wire
    if (d.seq != 0 && l.seq() < d.seq) continue;  // late: a newer lease is held
    const absl::Time expires = sent + absl::Milliseconds(l.lease_ms());
    if (d.seq != l.seq()) {
      // A new lease: what was learnt under an earlier one may be stale.
      Forget(&d);
      d.seq = l.seq();
      d.expires = expires;
    } else {
      d.expires = std::max(d.expires, expires);
    }
    // A search check made before this client's own permission change
    // reached it may have been made under the old permissions.
    if (l.searchable() && sent >= d.permissions_changed && d.searchers.size() < kSearchersMax &&
        std::none_of(d.searchers.begin(), d.searchers.end(),
                     [&](const pb::Creds& c) { return SameCreds(c, r.creds()); })) {
      pb::Creds& c = d.searchers.emplace_back();
      c.set_uid(r.creds().uid());
      c.set_gid(r.creds().gid());
      *c.mutable_groups() = r.creds().groups();
    }
  }
  for (const pb::DirLease& l : reply.attr_caps()) {
    AttrCap& a = attrs_[l.ino()];
    if (l.seq() <= a.revoked) continue;           // crossed a revoke on the wire
    if (a.seq != 0 && l.seq() < a.seq) continue;  // late: a newer cap is held
    const absl::Time expires = sent + absl::Milliseconds(l.lease_ms());
    a.expires = a.seq == l.seq() ? std::max(a.expires, expires) : expires;
    a.version = a.seq == l.seq() ? std::max(a.version, VersionIn(reply, l.ino()))
                                 : VersionIn(reply, l.ino());
    a.seq = l.seq();
  }
  // A name made (or found there already: EEXIST) by this client's request.
  auto made = [&](uint64_t dir, const std::string& name, uint64_t ino)
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (status.ok() || IsExists(status)) Added(dir, name, status.ok() ? ino : 0);
  };
  if (status.ok()) {
    if (const uint64_t dir = PermissionsChangedBy(r, reply); dir != 0) ChangedPermissions(dir, now);
  }
  using R = pb::MetaRequest;
  switch (r.op_case()) {
    case R::kLookup:
      if (IsNoEntry(status)) Absent(reply, r.lookup().parent(), r.lookup().name(), now);
      if (status.ok()) {
        Found(reply, r.lookup().parent(), r.lookup().name(), reply.attr().ino(), now);
      }
      break;
    case R::kCreate: made(r.create().parent(), r.create().name(), reply.attr().ino()); break;
    case R::kSymlink: made(r.symlink().parent(), r.symlink().name(), reply.attr().ino()); break;
    case R::kLink: made(r.link().new_parent(), r.link().new_name(), r.link().ino()); break;
    case R::kMkdir:
      made(r.mkdir().parent(), r.mkdir().name(), reply.attr().ino());
      if (!status.ok()) break;
      if (Dir* d = Held(reply.attr().ino(), SeqIn(reply, reply.attr().ino()), now)) {
        d->complete = true;  // new, so empty: every name is absent
        d->names.clear();
        d->absent.clear();
      }
      break;
    case R::kUnlink:
      if (status.ok()) Absent(reply, r.unlink().parent(), r.unlink().name(), now);
      break;
    case R::kRmdir:
      if (status.ok()) Absent(reply, r.rmdir().parent(), r.rmdir().name(), now);
      break;
    case R::kRename: {
      const pb::RenameOp& op = r.rename();
      if (!status.ok()) break;
      const uint64_t moved = InodeKnown(op.parent(), op.name());
      if (op.flags() & RENAME_EXCHANGE) {  // both names stay, their inodes swap
        const uint64_t other = InodeKnown(op.new_parent(), op.new_name());
        Added(op.parent(), op.name(), other);
        Added(op.new_parent(), op.new_name(), moved);
        break;
      }
      // The new name first: renaming a name onto itself keeps it.
      Added(op.new_parent(), op.new_name(), moved);
      if (op.parent() != op.new_parent() || op.name() != op.new_name()) {
        Absent(reply, op.parent(), op.name(), now);
      }
      break;
    }
    default:
      break;
  }
  Prune(now);
}

void DirLeases::Prune(absl::Time now) {
  if (now - last_prune_ < absl::Seconds(10)) return;
  last_prune_ = now;
  absl::erase_if(dirs_, [this, now](const auto& kv) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const Dir& d = kv.second;
    return !Trusted(d, now) && (d.revoked == 0 || now - d.revoked_at > kRevokeMemory) &&
           now - d.permissions_changed > kRevokeMemory;
  });
  absl::erase_if(attrs_, [this, now](const auto& kv) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const AttrCap& a = kv.second;
    return !TrustedAttrs(a, now) && (a.revoked == 0 || now - a.revoked_at > kRevokeMemory);
  });
}

std::optional<uint64_t> DirLeases::Known(uint64_t dir, const std::string& name,
                                         const pb::Creds& creds, absl::Time now) {
  // A name over NAME_MAX is not absent but invalid: the MDS says so, after
  // its search check (as a local filesystem orders them).
  constexpr size_t kNameMax = 255;
  if (name.empty() || name == "." || name == ".." || name.size() > kNameMax) return std::nullopt;
  absl::MutexLock lock(&mu_);
  if (!up_) return std::nullopt;
  auto it = dirs_.find(dir);
  if (it == dirs_.end()) return std::nullopt;
  const Dir& d = it->second;
  if (!Trusted(d, now)) return std::nullopt;
  if (std::none_of(d.searchers.begin(), d.searchers.end(),
                   [&](const pb::Creds& c) { return SameCreds(c, creds); })) {
    return std::nullopt;
  }
  if (d.absent.contains(name)) return 0;
  if (!d.complete) {
    auto f = d.found.find(name);
    return f != d.found.end() ? std::optional<uint64_t>(f->second) : std::nullopt;
  }
  auto n = d.names.find(name);
  if (n == d.names.end()) return 0;
  if (n->second == 0) return std::nullopt;  // there, but which inode is not known
  return n->second;
}

absl::Duration DirLeases::Remaining(uint64_t dir, absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (!up_) return absl::ZeroDuration();
  auto it = dirs_.find(dir);
  if (it == dirs_.end() || !Trusted(it->second, now)) return absl::ZeroDuration();
  return Until(it->second.expires) - now;
}

size_t DirLeases::attr_caps() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  return std::count_if(attrs_.begin(), attrs_.end(),
                       [this, now](const auto& kv) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                         return TrustedAttrs(kv.second, now);
                       });
}

size_t DirLeases::size() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  return std::count_if(dirs_.begin(), dirs_.end(),
                       [this, now](const auto& kv) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                         return Trusted(kv.second, now);
                       });
}

}  // namespace weft::client
