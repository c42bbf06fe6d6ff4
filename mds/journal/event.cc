#include "mds/journal/event.h"

#include "absl/strings/str_cat.h"
#include "common/fs/attr_wire.h"
#include "common/status/status.h"

namespace weft::mds {
namespace {

absl::Status Corrupt(uint64_t seq, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("journal event ", seq, ": ", what));
}

pb::DentryRec DentryRecord(const Dentry& d) {
  pb::DentryRec rec;
  rec.set_dir(d.dir.value());
  rec.set_name(d.name);
  rec.set_ino(d.ino.value());
  rec.set_type(d.type);
  return rec;
}

// `linked`: the entry names a target (an upsert), not only a removal.
absl::StatusOr<Dentry> DentryOf(const pb::DentryRec& rec, uint64_t seq, bool linked) {
  if (rec.dir() == 0 || rec.name().empty()) return Corrupt(seq, "a dentry without a directory or name");
  if (linked && rec.ino() == 0) {
    return Corrupt(seq, absl::StrCat("dentry ", rec.dir(), "/", rec.name(), " names no inode"));
  }
  return Dentry{InodeId(rec.dir()), rec.name(), InodeId(rec.ino()), rec.type()};
}

fs::FileLayout LayoutOf(const pb::FileLayout* layout) {
  return layout == nullptr ? fs::FileLayout() : fs::FromWire(*layout);
}

}  // namespace

pb::PurgeRec PurgeRecord(const Purge& purge) {
  pb::PurgeRec rec;
  rec.set_ino(purge.ino.value());
  rec.set_size(purge.size);
  if (purge.layout.has_value()) fs::ToWire(purge.layout, rec.mutable_layout());
  return rec;
}

absl::StatusOr<Purge> PurgeOf(const pb::PurgeRec& rec) {
  if (rec.ino() == 0) return absl::DataLossError("a purge without an inode");
  return Purge{InodeId(rec.ino()), rec.size(),
               LayoutOf(rec.has_layout() ? &rec.layout() : nullptr)};
}

pb::TrimRec CutRecord(const Cut& cut) {
  pb::TrimRec rec;
  rec.set_ino(cut.ino.value());
  rec.set_keep(cut.keep);
  rec.set_size(cut.size);
  if (cut.layout.has_value()) fs::ToWire(cut.layout, rec.mutable_layout());
  return rec;
}

absl::StatusOr<Cut> CutOf(const pb::TrimRec& rec) {
  if (rec.ino() == 0) return absl::DataLossError("a truncate's cut without an inode");
  return Cut{InodeId(rec.ino()), rec.keep(), rec.size(),
             LayoutOf(rec.has_layout() ? &rec.layout() : nullptr)};
}

pb::JournalEvent EventRecord(const Event& ev) {
  pb::JournalEvent rec;
  rec.set_seq(ev.seq);
  rec.set_op(ev.op);
  for (const Inode& inode : ev.inodes) *rec.add_inodes() = RecordOf(inode);
  for (InodeId ino : ev.removed_inodes) rec.add_removed_inodes(ino.value());
  for (const Dentry& d : ev.dentries) *rec.add_dentries() = DentryRecord(d);
  for (const Dentry& d : ev.removed_dentries) {
    pb::DentryRec* r = rec.add_removed_dentries();
    r->set_dir(d.dir.value());
    r->set_name(d.name);
  }
  rec.set_next_ino(ev.next_ino);
  for (const SessionHeader& h : ev.sessions) {
    pb::SessionRec* r = rec.add_sessions();
    r->set_id(h.id.value());
    r->set_client(h.client);
    r->set_opened_ms(h.opened_ms);
    r->set_closed(h.closed);
    r->set_osd_client(h.osd_client);
  }
  rec.set_session(ev.session.value());
  rec.set_tid(ev.tid.value());
  rec.set_reply(ev.reply);
  rec.set_oldest_tid(ev.oldest_tid.value());
  for (const Stray& s : ev.strays_added) {
    rec.add_stray_add(s.ino.value());
    if (s.holder.value() != 0) (*rec.mutable_stray_holders())[s.ino.value()] = s.holder.value();
  }
  for (InodeId ino : ev.strays_removed) rec.add_stray_remove(ino.value());
  for (const Purge& p : ev.purges_added) *rec.add_purge_add() = PurgeRecord(p);
  for (InodeId ino : ev.purges_done) rec.add_purge_done(ino.value());
  for (const FragSplit& s : ev.splits) {
    pb::FragSplit* r = rec.add_splits();
    r->set_dir(s.dir.value());
    r->set_frag(s.frag);
  }
  for (const Cut& c : ev.cuts_added) *rec.add_trim_add() = CutRecord(c);
  for (InodeId ino : ev.cuts_done) rec.add_trim_done(ino.value());
  for (const RStatChange& c : ev.rstat_changes) {
    pb::RStatDeltaRec* r = rec.add_rstat_deltas();
    r->set_dir(c.dir.value());
    r->set_rbytes(c.delta.rbytes);
    r->set_rfiles(c.delta.rfiles);
    r->set_rsubdirs(c.delta.rsubdirs);
    r->set_rctime_ns(c.delta.rctime_ns);
  }
  for (const RStatMove& m : ev.rstat_moves) {
    pb::RStatMoveRec* r = rec.add_rstat_moves();
    r->set_from(m.from.value());
    r->set_to(m.to.value());
  }
  rec.set_rstat_propagated(ev.rstat_propagated);
  return rec;
}

absl::StatusOr<Event> EventOf(const pb::JournalEvent& rec) {
  const uint64_t seq = rec.seq();
  Event ev;
  ev.seq = seq;
  ev.op = rec.op();
  ev.inodes.reserve(rec.inodes_size());
  for (const pb::InodeRec& r : rec.inodes()) {
    if (r.ino() == 0) return Corrupt(seq, "an inode without a number");
    ev.inodes.push_back(InodeOf(r));
  }
  for (uint64_t ino : rec.removed_inodes()) ev.removed_inodes.emplace_back(ino);
  ev.dentries.reserve(rec.dentries_size());
  for (const pb::DentryRec& r : rec.dentries()) {
    ASSIGN_OR_RETURN(Dentry d, DentryOf(r, seq, /*linked=*/true));
    ev.dentries.push_back(std::move(d));
  }
  for (const pb::DentryRec& r : rec.removed_dentries()) {
    ASSIGN_OR_RETURN(Dentry d, DentryOf(r, seq, /*linked=*/false));
    ev.removed_dentries.push_back(std::move(d));
  }
  ev.next_ino = rec.next_ino();
  for (const pb::SessionRec& r : rec.sessions()) {
    ev.sessions.push_back(
        SessionHeader{SessionId(r.id()), r.client(), r.opened_ms(), r.closed(), r.osd_client()});
  }
  ev.session = SessionId(rec.session());
  ev.tid = RequestId(rec.tid());
  ev.reply = rec.reply();
  ev.oldest_tid = RequestId(rec.oldest_tid());
  for (uint64_t ino : rec.stray_add()) {
    auto h = rec.stray_holders().find(ino);
    ev.strays_added.push_back(
        Stray{InodeId(ino), SessionId(h == rec.stray_holders().end() ? 0 : h->second)});
  }
  for (uint64_t ino : rec.stray_remove()) ev.strays_removed.emplace_back(ino);
  for (const pb::PurgeRec& r : rec.purge_add()) {
    absl::StatusOr<Purge> p = PurgeOf(r);
    if (!p.ok()) return Corrupt(seq, p.status().message());
    ev.purges_added.push_back(*std::move(p));
  }
  for (uint64_t ino : rec.purge_done()) ev.purges_done.emplace_back(ino);
  for (const pb::FragSplit& s : rec.splits()) {
    ev.splits.push_back(FragSplit{InodeId(s.dir()), s.frag()});
  }
  for (const pb::TrimRec& r : rec.trim_add()) {
    absl::StatusOr<Cut> c = CutOf(r);
    if (!c.ok()) return Corrupt(seq, c.status().message());
    ev.cuts_added.push_back(*std::move(c));
  }
  for (uint64_t ino : rec.trim_done()) ev.cuts_done.emplace_back(ino);
  for (const pb::RStatDeltaRec& r : rec.rstat_deltas()) {
    ev.rstat_changes.push_back(RStatChange{
        InodeId(r.dir()), RStatDelta{r.rbytes(), r.rfiles(), r.rsubdirs(), r.rctime_ns()}});
  }
  for (const pb::RStatMoveRec& m : rec.rstat_moves()) {
    ev.rstat_moves.push_back(RStatMove{InodeId(m.from()), InodeId(m.to())});
  }
  ev.rstat_propagated = rec.rstat_propagated();
  return ev;
}

}  // namespace weft::mds
