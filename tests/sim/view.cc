#include "tests/sim/view.h"

#include <sys/stat.h>

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "mds/fs/names.h"

namespace weft::sim {
namespace {

using mds::Frag;

bool IsDirMode(uint32_t mode) { return (mode & S_IFMT) == S_IFDIR; }

uint32_t DtOf(uint32_t mode) { return (mode >> 12) & 017; }

// Every inode stored in the inode table objects of `fs`.
std::map<uint64_t, pb::InodeRec> StoredInodes(objects::MemObjects& store, PoolId pool,
                                              uint32_t fs) {
  std::map<uint64_t, pb::InodeRec> out;
  const std::string prefix = absl::StrCat("fs", fs, ".inodes.");
  for (const std::string& oid : store.Names(pool, prefix)) {
    auto object = store.Find(pool, oid);
    if (!object) continue;
    for (const auto& [key, value] : object->omap) {
      if (absl::EndsWith(key, ".d")) continue;  // inline data
      pb::InodeRec rec;
      if (rec.ParseFromString(value)) out[rec.ino()] = rec;
    }
  }
  return out;
}

std::map<std::string, pb::DentryRec> StoredFrag(objects::MemObjects& store, PoolId pool,
                                                uint32_t fs, uint64_t dir, Frag frag) {
  std::map<std::string, pb::DentryRec> out;
  auto object = store.Find(pool, mds::DirFragObject(fs, dir, frag));
  if (!object) return out;
  for (const auto& [name, value] : object->omap) {
    pb::DentryRec rec;
    if (!rec.ParseFromString(value)) continue;
    rec.set_dir(dir);
    rec.set_name(name);
    out[name] = rec;
  }
  return out;
}

}  // namespace

View ReadView(const mds::MetaCache& cache, const mds::Sessions& sessions,
              const absl::flat_hash_map<uint64_t, mds::RStatDelta>& rstat_pending,
              objects::MemObjects& store, PoolId pool, uint32_t fs) {
  View v;
  for (auto& [ino, rec] : StoredInodes(store, pool, fs)) {
    if (!cache.InodeRemoved(ino)) v.inodes[ino] = rec;
  }
  for (const auto& [ino, inode] : cache.inodes()) v.inodes[ino] = mds::RecordOf(inode->inode);
  for (const auto& [ino, rec] : v.inodes) {
    if (!IsDirMode(rec.mode())) continue;
    std::map<std::string, pb::DentryRec>& entries = v.dirs[ino];
    const mds::CDir* cached = nullptr;
    if (auto it = cache.dirs().find(ino); it != cache.dirs().end()) cached = it->second.get();
    for (Frag f : mds::SortedFrags({rec.frags().begin(), rec.frags().end()})) {
      const bool loaded = cached != nullptr && cached->loaded.contains(f);
      if (!loaded) {
        for (auto& [name, d] : StoredFrag(store, pool, fs, ino, f)) {
          if (cached != nullptr && cached->removed.contains(name)) continue;
          entries[name] = d;
        }
      }
      if (cached == nullptr) continue;
      // What the cache knows of the fragment stands over the store.
      for (const auto& [name, e] : cached->entries) {
        if (!mds::FragContains(f, mds::NameHash(name))) continue;
        pb::DentryRec d;
        d.set_dir(ino);
        d.set_name(name);
        d.set_ino(e.ino.value());
        d.set_type(e.type);
        entries[name] = d;
      }
    }
  }
  v.strays = cache.strays();
  v.purge = cache.purge_queue();
  v.trims = cache.trims();
  for (const auto& [id, s] : sessions.all()) {
    for (const auto& [ino, n] : s.opens) {
      if (n > 0) v.opens[id.value()][ino] = n;
    }
  }
  v.rstats_settled = rstat_pending.empty();
  return v;
}

std::string CheckInvariants(const View& v, bool rstats) {
  // Who names what.
  std::map<uint64_t, int> named;                 // ino -> dentries
  std::map<uint64_t, std::vector<uint64_t>> by;  // ino -> dirs naming it
  std::map<uint64_t, int> subdirs;               // dir -> subdirectory dentries
  for (const auto& [dir, entries] : v.dirs) {
    for (const auto& [name, d] : entries) {
      auto it = v.inodes.find(d.ino());
      if (it == v.inodes.end()) {
        return absl::StrCat("dentry ", dir, "/", name, " names inode ", d.ino(),
                            ", which does not exist");
      }
      if (DtOf(it->second.mode()) != d.type()) {
        return absl::StrCat("dentry ", dir, "/", name, " has type ", d.type(), ", its inode ",
                            d.ino(), " mode ", it->second.mode());
      }
      ++named[d.ino()];
      by[d.ino()].push_back(dir);
      if (IsDirMode(it->second.mode())) ++subdirs[dir];
    }
  }
  for (const auto& [ino, rec] : v.inodes) {
    const int links = named.contains(ino) ? named.at(ino) : 0;
    if (IsDirMode(rec.mode())) {
      if (ino == mds::kRootIno) {
        if (links != 0) return absl::StrCat("the root is named by ", links, " dentries");
      } else if (links != 1) {
        return absl::StrCat("directory ", ino, " is named by ", links, " dentries");
      } else if (by.at(ino)[0] != rec.parent()) {
        return absl::StrCat("directory ", ino, " is in ", by.at(ino)[0], ", its parent says ",
                            rec.parent());
      }
      const int want = 2 + (subdirs.contains(ino) ? subdirs.at(ino) : 0);
      if (static_cast<int>(rec.nlink()) != want) {
        return absl::StrCat("directory ", ino, " has nlink ", rec.nlink(), ", ", want,
                            " expected (2 + its subdirectories)");
      }
      continue;
    }
    if (static_cast<int>(rec.nlink()) != links) {
      return absl::StrCat("inode ", ino, " has nlink ", rec.nlink(), " and ", links,
                          " dentries naming it");
    }
    if (links == 0) {
      // Unlinked while open: a stray, held by a session that has it open.
      if (!v.strays.contains(ino)) return absl::StrCat("inode ", ino, " is named by nothing");
      bool held = false;
      for (const auto& [session, opens] : v.opens) held |= opens.contains(ino);
      if (!held && !v.reconnecting) {
        return absl::StrCat("stray inode ", ino, " is open in no session");
      }
    } else if (v.strays.contains(ino)) {
      return absl::StrCat("inode ", ino, " is a stray with ", links, " links");
    }
  }
  for (const auto& [ino, holder] : v.strays) {
    if (!v.inodes.contains(ino)) return absl::StrCat("stray ", ino, " has no inode");
  }
  for (const auto& [ino, rec] : v.purge) {
    if (v.inodes.contains(ino)) return absl::StrCat("inode ", ino, " is purged while it exists");
  }
  // Reachable from the root (directories through their one dentry).
  std::set<uint64_t> reached = {mds::kRootIno};
  std::vector<uint64_t> work = {mds::kRootIno};
  while (!work.empty()) {
    const uint64_t dir = work.back();
    work.pop_back();
    auto it = v.dirs.find(dir);
    if (it == v.dirs.end()) continue;
    for (const auto& [name, d] : it->second) {
      if (reached.insert(d.ino()).second && v.dirs.contains(d.ino())) work.push_back(d.ino());
    }
  }
  for (const auto& [ino, rec] : v.inodes) {
    if (!reached.contains(ino) && !v.strays.contains(ino)) {
      return absl::StrCat("inode ", ino, " is not reachable from the root");
    }
  }
  if (!rstats || !v.rstats_settled) return "";
  // Recursive statistics: every live inode counted once, in the directory
  // its `parent` names and every directory above.
  std::map<uint64_t, pb::RStat> want;
  for (const auto& [ino, rec] : v.inodes) {
    if (ino == mds::kRootIno || rec.nlink() == 0) continue;
    const bool dir = IsDirMode(rec.mode());
    const uint64_t bytes = (rec.mode() & S_IFMT) == S_IFREG ? rec.size() : 0;
    uint64_t up = rec.parent();
    for (int depth = 0; depth < 4096; ++depth) {
      pb::RStat& r = want[up];
      r.set_rfiles(r.rfiles() + (dir ? 0 : 1));
      r.set_rsubdirs(r.rsubdirs() + (dir ? 1 : 0));
      r.set_rbytes(r.rbytes() + bytes);
      if (up == mds::kRootIno) break;
      auto p = v.inodes.find(up);
      if (p == v.inodes.end()) break;
      up = p->second.parent();
    }
  }
  // Of the directories whose statistics are off, the deepest one: those
  // above it are off because of it.
  std::string worst;
  int worst_depth = -1;
  for (const auto& [ino, rec] : v.inodes) {
    if (!IsDirMode(rec.mode())) continue;
    const pb::RStat w = want.contains(ino) ? want.at(ino) : pb::RStat();
    if (rec.rstat().rfiles() == w.rfiles() && rec.rstat().rsubdirs() == w.rsubdirs() &&
        rec.rstat().rbytes() == w.rbytes()) {
      continue;
    }
    int depth = 0;
    for (uint64_t up = ino; up != mds::kRootIno && depth < 4096; ++depth) {
      auto p = v.inodes.find(up);
      if (p == v.inodes.end()) break;
      up = p->second.parent();
    }
    if (depth <= worst_depth) continue;
    worst_depth = depth;
    worst = absl::StrCat("directory ", ino, " has rfiles/rsubdirs/rbytes ", rec.rstat().rfiles(),
                         "/", rec.rstat().rsubdirs(), "/", rec.rstat().rbytes(), ", its subtree ",
                         w.rfiles(), "/", w.rsubdirs(), "/", w.rbytes());
  }
  return worst;
  return "";
}

}  // namespace weft::sim
