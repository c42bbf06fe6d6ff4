#include "mds/cache/meta_cache.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log/log.h"

namespace weft::mds {
namespace {

// The rows of `table` (by inode) changed since the last flush, as an update
// of its table object `object`; `changed` is cleared.
template <typename Value, typename Encode>
void TakeTableChanges(const std::map<uint64_t, Value>& table, Encode encode,
                      absl::flat_hash_set<uint64_t>* changed,
                      std::map<std::string, ObjectUpdate>& updates, const std::string& object) {
  if (changed->empty()) return;
  ObjectUpdate& u = updates[object];
  for (uint64_t ino : *changed) {
    auto it = table.find(ino);
    if (it == table.end()) {
      u.rm.push_back(InodeKey(ino));
    } else {
      u.set.emplace_back(InodeKey(ino), encode(it->second));
    }
  }
  changed->clear();
}

// Restores a table of records by inode (`Record` stored, `of` to the
// domain value). A row that does not parse, or names no inode, is skipped
// with a warning: nothing could be done with it.
template <typename Record, typename Value, typename Of>
void LoadRows(const std::map<std::string, std::string>& rows, Of of, absl::string_view table,
              std::map<uint64_t, Value>* out) {
  for (const auto& [key, bytes] : rows) {
    Record rec;
    absl::StatusOr<Value> value =
        rec.ParseFromString(bytes) ? of(rec) : absl::DataLossError("does not parse");
    if (value.ok()) {
      (*out)[value->ino.value()] = *std::move(value);
    } else {
      LOG(WARNING) << "event=table_row_skipped table=" << table << " key=" << key << " status=\""
                   << value.status() << "\"";
    }
  }
}

}  // namespace

CInode* MetaCache::Inode(uint64_t ino) {
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return nullptr;
  it->second->last_used = Tick();
  return it->second.get();
}

CDir* MetaCache::Dir(uint64_t ino) {
  auto& d = dirs_[ino];
  if (!d) d = std::make_unique<CDir>();
  d->last_used = Tick();
  return d.get();
}

std::vector<uint64_t> MetaCache::DirtyDirsWithoutInode() {
  std::vector<uint64_t> out;
  for (uint64_t dir : dirty_dirs_) {
    if (!inodes_.contains(dir) && !InodeRemoved(dir)) out.push_back(dir);
  }
  return out;
}

bool MetaCache::FragLoaded(uint64_t dir, Frag frag) {
  auto it = dirs_.find(dir);
  return it != dirs_.end() && it->second->loaded.contains(frag);
}

void CDir::AddHash(uint64_t hash, const std::string& name) {
  if (!by_hash.insert_or_assign(hash, name).second) return;
  for (auto& [frag, count] : counts) count += FragContains(frag, hash) ? 1 : 0;
}

void CDir::EraseHash(uint64_t hash) {
  if (by_hash.erase(hash) == 0) return;
  for (auto& [frag, count] : counts) count -= FragContains(frag, hash) ? 1 : 0;
}

size_t MetaCache::FragCount(uint64_t dir, Frag frag) {
  auto it = dirs_.find(dir);
  if (it == dirs_.end()) return 0;
  CDir& d = *it->second;
  auto counted = d.counts.find(frag);
  if (counted != d.counts.end()) return counted->second;
  // Walked once per fragment; AddHash and EraseHash keep it from then on.
  auto first = d.by_hash.lower_bound(FragStart(frag));
  auto last = d.by_hash.lower_bound(FragEnd(frag));
  const size_t n = static_cast<size_t>(std::distance(first, last));
  d.counts[frag] = n;
  return n;
}

const CDentry* MetaCache::Lookup(uint64_t dir, const std::string& name, bool* known) {
  *known = false;
  auto it = dirs_.find(dir);
  if (it != dirs_.end()) {
    CDir* d = it->second.get();
    d->last_used = Tick();
    auto e = d->entries.find(name);
    if (e != d->entries.end()) {
      *known = true;
      return &e->second;
    }
    if (d->removed.contains(name)) {
      *known = true;
      return nullptr;
    }
  }
  CInode* di = Inode(dir);
  if (di == nullptr) return nullptr;
  std::vector<Frag> frags(di->inode.frags.begin(), di->inode.frags.end());
  *known = FragLoaded(dir, FragFor(frags, NameHash(name)));
  return nullptr;
}

void MetaCache::MergeInode(const pb::InodeRec& rec) {
  if (inodes_.contains(rec.ino()) || removed_inodes_.contains(rec.ino()) ||
      unstored_removed_.contains(rec.ino())) {
    return;
  }
  auto inode = std::make_unique<CInode>();
  inode->inode = InodeOf(rec);
  inode->last_used = Tick();
  inline_bytes_ += InlineBytes(inode->inode);
  inodes_[rec.ino()] = std::move(inode);
}

void MetaCache::MergeInline(uint64_t ino, const pb::InlineRec& data) {
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return;
  mds::Inode& inode = it->second->inode;
  if (!inode.data_inline || inode.inline_data) return;
  if (inode.inline_version != data.inline_version()) return;
  inode.inline_data = data.data();
  inline_bytes_ += data.data().size();
}

void MetaCache::MergeFrag(uint64_t dir, Frag frag, const std::vector<pb::DentryRec>& entries) {
  CDir* d = Dir(dir);
  if (d->loaded.contains(frag)) return;
  for (const pb::DentryRec& e : entries) {
    // The store answers the fragment asked for: its entries, no other's.
    DCHECK(e.dir() == dir && FragContains(frag, NameHash(e.name())) && e.ino() != 0)
        << "fragment " << frag << " of " << dir << " loaded with entry " << e.name() << " of "
        << e.dir() << " -> " << e.ino();
    if (d->entries.contains(e.name()) || d->removed.contains(e.name())) continue;
    d->entries[e.name()] = CDentry{InodeId(e.ino()), e.type()};
    d->AddHash(NameHash(e.name()), e.name());
    ++dentries_;
  }
  for (auto it = d->removed.begin(); it != d->removed.end();) {
    auto cur = it++;
    if (FragContains(frag, NameHash(*cur))) d->removed.erase(cur);
  }
  d->loaded.insert(frag);
}

void MetaCache::SetDentry(const Dentry& entry) {
  CDir* d = Dir(entry.dir.value());
  auto [it, inserted] = d->entries.try_emplace(entry.name);
  it->second = CDentry{entry.ino, entry.type};
  if (inserted) {
    d->AddHash(NameHash(entry.name), entry.name);
    ++dentries_;
  }
  d->removed.erase(entry.name);
  d->dirty.insert(entry.name);
  dirty_dirs_.insert(entry.dir.value());
}

void MetaCache::RemoveDentry(uint64_t dir, const std::string& name) {
  CDir* d = Dir(dir);
  if (d->entries.erase(name) > 0) {
    d->EraseHash(NameHash(name));
    --dentries_;
  }
  d->removed.insert(name);
  d->dirty.insert(name);
  dirty_dirs_.insert(dir);
}

void MetaCache::Apply(const Event& ev) {
  for (const FragSplit& split : ev.splits) {
    CDir* d = Dir(split.dir.value());
    auto [a, b] = SplitFrag(split.frag);
    d->dead.insert(split.frag);
    d->rewrite.erase(split.frag);
    d->loaded.erase(split.frag);
    d->counts.erase(split.frag);
    for (Frag half : {a, b}) {
      d->rewrite.insert(half);
      d->loaded.insert(half);
    }
    dirty_dirs_.insert(split.dir.value());
  }
  for (const mds::Inode& changed : ev.inodes) {
    const uint64_t ino = changed.ino.value();
    auto& slot = inodes_[ino];
    if (!slot) slot = std::make_unique<CInode>();
    inline_bytes_ -= InlineBytes(slot->inode);
    // An event carries inline bytes only where they changed: the cached
    // ones stand otherwise (or stay unloaded).
    std::optional<std::string> kept;
    const bool keep = changed.data_inline && !changed.inline_data.has_value() &&
                      slot->inode.data_inline && slot->inode.inline_data.has_value();
    if (keep) kept = std::move(slot->inode.inline_data);
    if (changed.inline_data.has_value()) slot->inline_dirty = true;
    slot->inode = changed;
    if (keep) slot->inode.inline_data = std::move(kept);
    if (!changed.data_inline) slot->inode.inline_data.reset();
    inline_bytes_ += InlineBytes(slot->inode);
    slot->last_used = Tick();
    slot->dirty = true;
    dirty_inodes_.insert(ino);
    removed_inodes_.erase(ino);
    unstored_removed_.erase(ino);
    absent_.erase(ino);
  }
  for (InodeId id : ev.removed_inodes) {
    const uint64_t ino = id.value();
    auto it = inodes_.find(ino);
    std::vector<Frag> frags = {kRootFrag};
    if (it != inodes_.end()) {
      const mds::Inode& gone = it->second->inode;
      frags = SortedFrags({gone.frags.begin(), gone.frags.end()});
      if ((gone.mode & 0170000) != 0040000) frags.clear();
      inline_bytes_ -= InlineBytes(gone);
      inodes_.erase(it);
    }
    if (!frags.empty()) {
      CDir* d = Dir(ino);
      for (Frag f : frags) d->dead.insert(f);
      d->rewrite.clear();
      dirty_dirs_.insert(ino);
    }
    dirty_inodes_.erase(ino);
    removed_inodes_.insert(ino);
  }
  for (const Dentry& d : ev.removed_dentries) RemoveDentry(d.dir.value(), d.name);
  for (const Dentry& d : ev.dentries) SetDentry(d);
  if (ev.next_ino > next_ino_) {
    next_ino_ = ev.next_ino;
    next_ino_dirty_ = true;
  }
  for (const Stray& stray : ev.strays_added) {
    const uint64_t ino = stray.ino.value();
    DCHECK(inodes_.contains(ino) && inodes_.at(ino)->inode.nlink == 0)
        << "stray " << ino << " still linked, or not in the event that made it a stray";
    strays_[ino] = stray.holder.value();
    strays_changed_.insert(ino);
  }
  for (InodeId ino : ev.strays_removed) {
    strays_.erase(ino.value());
    strays_changed_.insert(ino.value());
  }
  for (const Purge& purge : ev.purges_added) {
    const uint64_t ino = purge.ino.value();
    DCHECK(!inodes_.contains(ino) && removed_inodes_.contains(ino))
        << "purge of inode " << ino << ", which the event does not remove";
    purge_[ino] = purge;
    purge_changed_.insert(ino);
  }
  for (InodeId ino : ev.purges_done) {
    purge_.erase(ino.value());
    purge_changed_.insert(ino.value());
  }
  for (const Cut& cut : ev.cuts_added) {
    const uint64_t ino = cut.ino.value();
    auto [it, added] = trims_.try_emplace(ino, cut);
    if (!added) {  // one cut covering both
      it->second.keep = std::min(it->second.keep, cut.keep);
      it->second.size = std::max(it->second.size, cut.size);
    }
    trims_changed_.insert(ino);
  }
  for (InodeId ino : ev.cuts_done) {
    trims_.erase(ino.value());
    trims_changed_.insert(ino.value());
  }
}

void MetaCache::AddInodeUpdates(FlushBatch* batch) {
  for (uint64_t ino : dirty_inodes_) {
    auto it = inodes_.find(ino);
    if (it == inodes_.end()) continue;
    it->second->dirty = false;
    unstored_inodes_.insert(ino);
    pb::InodeRec rec = RecordOf(it->second->inode);  // the stored record
    ObjectUpdate& u = batch->updates[InodeTableObject(fs_, ino)];
    if (rec.has_inline_data()) {
      // The bytes under a key of their own, so that loading the inode
      // (a listing with attributes) does not read them.
      pb::InodeRec bare = rec;
      bare.clear_inline_data();
      u.set.emplace_back(InodeKey(ino), bare.SerializeAsString());
      // None stored reads as empty at version 0: a new file writes no key.
      if (it->second->inline_dirty && (rec.inline_version() != 0 || !rec.inline_data().empty())) {
        pb::InlineRec data;
        data.set_inline_version(rec.inline_version());
        data.set_data(rec.inline_data());
        u.set.emplace_back(InlineKey(ino), data.SerializeAsString());
      }
    } else {
      u.set.emplace_back(InodeKey(ino), rec.SerializeAsString());
      if ((rec.mode() & 0170000) == 0100000 && !rec.data_inline()) u.rm.push_back(InlineKey(ino));
    }
    it->second->inline_dirty = false;
    ++batch->inodes;
  }
  dirty_inodes_.clear();
  for (uint64_t ino : removed_inodes_) {
    ObjectUpdate& u = batch->updates[InodeTableObject(fs_, ino)];
    u.rm.push_back(InodeKey(ino));
    u.rm.push_back(InlineKey(ino));
    unstored_removed_.insert(ino);
  }
  removed_inodes_.clear();
}

void MetaCache::AddDirUpdates(FlushBatch* batch) {
  std::vector<uint64_t> kept;
  for (uint64_t dir : dirty_dirs_) {
    std::unique_ptr<CDir>& slot = dirs_[dir];  // not a use: no LRU tick
    if (!slot) slot = std::make_unique<CDir>();
    CDir* d = slot.get();
    auto ii = inodes_.find(dir);
    std::vector<Frag> frags = {kRootFrag};
    if (ii != inodes_.end()) {
      const mds::Inode& inode = ii->second->inode;
      frags = SortedFrags({inode.frags.begin(), inode.frags.end()});
    } else if (!d->dirty.empty() || !d->rewrite.empty()) {
      bool gone = d->entries.empty() && !d->dead.empty();
      if (!gone) {
        kept.push_back(dir);  // the flusher loads the inode and comes back
        continue;
      }
      d->dirty.clear();
      d->rewrite.clear();
    }
    for (Frag f : d->dead) batch->updates[DirFragObject(fs_, dir, f)].remove = true;
    for (Frag f : d->rewrite) {
      ObjectUpdate& u = batch->updates[DirFragObject(fs_, dir, f)];
      u.clear = true;
      for (auto it = d->by_hash.lower_bound(FragStart(f));
           it != d->by_hash.end() && it->first < FragEnd(f); ++it) {
        const CDentry& e = d->entries.at(it->second);
        pb::DentryRec rec;
        rec.set_ino(e.ino.value());
        rec.set_type(e.type);
        u.set.emplace_back(it->second, rec.SerializeAsString());
        ++batch->dentries;
      }
    }
    for (const std::string& name : d->dirty) {
      Frag f = FragFor(frags, NameHash(name));
      if (d->rewrite.contains(f)) continue;
      ObjectUpdate& u = batch->updates[DirFragObject(fs_, dir, f)];
      auto e = d->entries.find(name);
      if (e == d->entries.end()) {
        u.rm.push_back(name);
      } else {
        pb::DentryRec rec;
        rec.set_ino(e->second.ino.value());
        rec.set_type(e->second.type);
        u.set.emplace_back(name, rec.SerializeAsString());
      }
      ++batch->dentries;
    }
    d->dirty.clear();
    d->rewrite.clear();
    d->dead.clear();
    unstored_dirs_.insert(dir);
  }
  dirty_dirs_.clear();
  dirty_dirs_.insert(kept.begin(), kept.end());
}

void MetaCache::AddTableUpdates(FlushBatch* batch) {
  TakeTableChanges(
      strays_, [](uint64_t holder) { return absl::StrCat(holder); }, &strays_changed_,
      batch->updates, TableObject(fs_, rank_, "strays"));
  TakeTableChanges(
      purge_, [](const Purge& p) { return PurgeRecord(p).SerializeAsString(); }, &purge_changed_,
      batch->updates, TableObject(fs_, rank_, "purge"));
  TakeTableChanges(
      trims_, [](const Cut& c) { return CutRecord(c).SerializeAsString(); }, &trims_changed_,
      batch->updates, TableObject(fs_, rank_, "trims"));
  if (next_ino_dirty_) {
    batch->updates[TableObject(fs_, rank_, "inotable")].set.emplace_back("next_ino",
                                                                  absl::StrCat(next_ino_));
    next_ino_dirty_ = false;
  }
}

FlushBatch MetaCache::TakeDirty(uint64_t seq) {
  FlushBatch batch;
  batch.seq = seq;
  AddInodeUpdates(&batch);
  AddDirUpdates(&batch);
  AddTableUpdates(&batch);
  return batch;
}

void MetaCache::FlushApplied() {
  unstored_inodes_.clear();
  unstored_removed_.clear();
  unstored_dirs_.clear();
}

void MetaCache::LoadTables(const std::map<std::string, std::string>& strays,
                           const std::map<std::string, std::string>& purge,
                           const std::map<std::string, std::string>& trims,
                           const std::map<std::string, std::string>& inotable) {
  for (const auto& [key, value] : strays) {
    uint64_t ino = 0, holder = 0;
    if (absl::SimpleHexAtoi(key, &ino) && absl::SimpleAtoi(value, &holder)) strays_[ino] = holder;
  }
  LoadRows<pb::PurgeRec>(purge, PurgeOf, "purge", &purge_);
  LoadRows<pb::TrimRec>(trims, CutOf, "trims", &trims_);
  auto it = inotable.find("next_ino");
  uint64_t next = 0;
  if (it != inotable.end() && absl::SimpleAtoi(it->second, &next) && next > next_ino_) {
    next_ino_ = next;
  }
}

void MetaCache::Trim(size_t max_bytes, const absl::flat_hash_set<uint64_t>& pinned) {
  if (EstimatedBytes() <= max_bytes) return;
  // (last used, ino, is a directory overlay)
  std::vector<std::tuple<uint64_t, uint64_t, bool>> candidates;
  for (auto& [ino, inode] : inodes_) {
    if (inode->dirty || ino == kRootIno || pinned.contains(ino) || unstored_inodes_.contains(ino)) {
      continue;
    }
    candidates.emplace_back(inode->last_used, ino, false);
  }
  for (auto& [ino, dir] : dirs_) {
    if (dir->Dirty() || dirty_dirs_.contains(ino) || unstored_dirs_.contains(ino)) continue;
    candidates.emplace_back(dir->last_used, ino, true);
  }
  std::sort(candidates.begin(), candidates.end());
  const size_t target = max_bytes - max_bytes / 10;
  for (const auto& [used, ino, is_dir] : candidates) {
    if (EstimatedBytes() <= target) break;
    if (is_dir) {
      auto d = dirs_.find(ino);
      dentries_ -= d->second->entries.size();
      dirs_.erase(d);
    } else {
      auto it = inodes_.find(ino);
      inline_bytes_ -= InlineBytes(it->second->inode);
      inodes_.erase(it);
    }
  }
}

}  // namespace weft::mds
