// readdir: entries in name-hash order from a cookie (the hash of the last
// entry returned), so it continues correctly across fragment splits and
// concurrent creates and removes.
#include <cerrno>

#include "common/status/status.h"
#include "mds/ops/ops.h"

namespace weft::mds {
namespace {
constexpr uint32_t kMaxEntries = 4096;
}  // namespace

absl::Status DoReaddir(OpContext& ctx, const req::Readdir& op, Reply* reply) {
  ASSIGN_OR_RETURN(const Inode* dir, ctx.Dir(op.ino));
  RETURN_IF_ERROR(CheckAccess(AccessOf(*dir), ctx.cred(), kMayRead));
  const uint32_t max = op.max_entries == 0 ? 1024 : std::min(op.max_entries, kMaxEntries);
  const uint64_t after = op.cookie;
  CDir* d = ctx.cache()->Dir(op.ino.value());
  reply->eof = true;
  // Fragments in hash order from the cookie's; each must be loaded before its
  // entries are listed. A page stops at an unloaded fragment once it has
  // entries (the next call loads it), so a huge directory is read a
  // fragment at a time.
  for (Frag f : SortedFrags({dir->frags.begin(), dir->frags.end()})) {
    if (FragEnd(f) <= after + 1) continue;
    if (!ctx.cache()->FragLoaded(op.ino.value(), f)) {
      if (reply->entries.size() > 0) {
        reply->eof = false;
        break;
      }
      RETURN_IF_ERROR(ctx.LoadFrag(op.ino, f));
    }
    for (auto it = d->by_hash.lower_bound(std::max(after + 1, FragStart(f)));
         it != d->by_hash.end() && it->first < FragEnd(f); ++it) {
      if (static_cast<uint32_t>(reply->entries.size()) >= max) {
        reply->eof = false;
        break;
      }
      const CDentry& e = d->entries.at(it->second);
      fs::DirEntry& out = reply->entries.emplace_back();
      out.name = it->second;
      out.ino = e.ino.value();
      out.type = e.type;
      out.cookie = it->first;
    }
    if (!reply->eof) break;
  }
  if (!op.with_attrs) return absl::OkStatus();
  bool need = false;
  for (fs::DirEntry& e : reply->entries) {
    auto inode = ctx.Inode(InodeId(e.ino));
    if (inode.ok()) {
      FillAttr(**inode, &e.attr);
    } else if (IsNeedLoad(inode.status())) {
      need = true;
    }
  }
  return need ? NeedLoad() : absl::OkStatus();
}

}  // namespace weft::mds
