#include "mds/caps/leases.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "common/log/log.h"
#include "common/posix/acl.h"

namespace weft::mds {
namespace {

// The directories a request changes in a way other lease holders must hear
// of. A change of who may search a directory (its mode, owner or access ACL)
// leaves the changer's own lease: the names it knows stay true, and it asks
// again who may search (fuse-client/lib/dir_leases.h).
std::vector<uint64_t> ChangesOf(const Request& r) {
  if (auto* op = r.As<req::Create>()) return {op->parent.value()};
  if (auto* op = r.As<req::Mkdir>()) return {op->parent.value()};
  if (auto* op = r.As<req::Symlink>()) return {op->parent.value()};
  if (auto* op = r.As<req::Link>()) return {op->new_parent.value()};
  if (auto* op = r.As<req::Unlink>()) return {op->parent.value()};
  if (auto* op = r.As<req::Rmdir>()) return {op->parent.value()};
  if (auto* op = r.As<req::Rename>()) {
    if (op->parent == op->new_parent) return {op->parent.value()};
    return {op->parent.value(), op->new_parent.value()};
  }
  if (auto* op = r.As<req::Setattr>()) {
    if (op->valid & posix::kSetPermissions) return {op->ino.value()};
    return {};
  }
  if (auto* op = r.As<req::Setxattr>()) {
    if (op->name == posix::kXattrPosixAclAccess) return {op->ino.value()};
    return {};
  }
  if (auto* op = r.As<req::Removexattr>()) {
    if (op->name == posix::kXattrPosixAclAccess) return {op->ino.value()};
    return {};
  }
  return {};
}

}  // namespace

uint64_t OpenedBy(const Request& request, const Reply& reply) {
  if (auto* op = request.As<req::Open>()) return op->ino.value();
  if (auto* op = request.As<req::Create>(); op != nullptr && op->open) return reply.attr.ino;
  return 0;
}

std::vector<uint64_t> ShownInos(const Reply& reply, const std::vector<uint64_t>& touched) {
  std::vector<uint64_t> shown = touched;
  if (reply.attr.ino != 0) shown.push_back(reply.attr.ino);
  for (const fs::DirEntry& e : reply.entries) {
    if (e.has_attr()) shown.push_back(e.attr.ino);
  }
  return shown;
}

// ---- streams

uint64_t Leases::OpenStream(SessionId session) {
  // The client dropped every lease when its earlier stream broke, and
  // trusts no grant of a request it sent before this hello; its opens stay.
  caps_.DropLeased(session.value());
  DropSessionRecalls(session.value());
  ++returns_;
  const uint64_t gen = ++stream_gen_;
  Stream& stream = streams_[session.value()];
  stream.gen = gen;
  stream.queue.clear();
  pb::LeaseEvent hello;
  hello.set_hello(true);
  hello.set_seq(gen);  // renewals name their stream (Renew)
  stream.queue.push_back(hello);
  stream.events = 1;
  return gen;
}

Leases::Renewal Leases::Renew(SessionId session, absl::Time now) {
  auto it = streams_.find(session.value());
  if (it == streams_.end()) return {};
  // A session that does not answer a recall for memory is not renewed: what
  // it holds runs out a lease after its last renewal, as it would without
  // renewals, instead of staying for as long as the session lives.
  if (auto r = unanswered_recall_.find(session.value());
      r != unanswered_recall_.end() && now - r->second > lease()) {
    return {};
  }
  caps_.Renew(session.value(), now);
  return {it->second.gen, it->second.events};
}

bool Leases::TakeEvents(SessionId session, uint64_t gen, std::deque<pb::LeaseEvent>* out) {
  auto it = streams_.find(session.value());
  if (it == streams_.end() || it->second.gen != gen) return false;
  out->swap(it->second.queue);
  it->second.queue.clear();
  return true;
}

bool Leases::StreamReady(SessionId session, uint64_t gen) const {
  auto it = streams_.find(session.value());
  return it == streams_.end() || it->second.gen != gen || !it->second.queue.empty();
}

void Leases::CloseStream(SessionId session, uint64_t gen) {
  auto it = streams_.find(session.value());
  if (it == streams_.end() || it->second.gen != gen) return;
  streams_.erase(it);
  DropSessionRecalls(session.value());
}

void Leases::DropSessionRecalls(uint64_t session) {
  unanswered_recall_.erase(session);
  absl::erase_if(recalls_, [&](const auto& r) { return r.first.first == session; });
  absl::erase_if(invals_, [&](const auto& r) { return r.first.first == session; });
}

void Leases::DropSession(SessionId session) {
  caps_.DropSession(session.value());
  DropSessionRecalls(session.value());
  recalled_at_.erase(session.value());
  ++returns_;
  streams_.erase(session.value());  // its stream ends
}

void Leases::Send(uint64_t session, const pb::LeaseEvent& event) {
  auto it = streams_.find(session);
  // No stream: the revoke cannot be delivered; the lease runs out instead.
  if (it == streams_.end()) return;
  it->second.queue.push_back(event);
  ++it->second.events;
}

// ---- directory leases

bool Leases::Revoke(const Request& request, absl::Time now, absl::Time* until) {
  std::vector<CapTable::Revoke> revokes;
  bool blocked = false;
  for (uint64_t dir : ChangesOf(request)) {
    // The change moves the directory's times (and its link count, size or
    // mode) too: the other holders of its attributes go in the same revoke,
    // not in a second one after the operation ran (RevokeAttrs).
    blocked |= caps_.Conflicts(dir, request.session.value(), caps::kLs | caps::kAttrs, now,
                               &revokes, until);
  }
  SendRevokes(revokes);
  if (!revokes.empty()) {
    VLOG(1) << "event=lease_revoke session=" << request.session << " n=" << revokes.size();
  }
  return blocked;
}

void Leases::SendRevokes(const std::vector<CapTable::Revoke>& revokes) {
  for (const CapTable::Revoke& r : revokes) {
    pb::LeaseEvent event;
    event.set_ino(r.ino);
    event.set_seq(r.seq);
    event.set_caps(r.bits);
    Send(r.session, event);
  }
}

size_t Leases::Room(uint64_t session) const {
  if (limits_.max_per_session == 0) return SIZE_MAX;
  const size_t held = HeldBy(session);
  return held < limits_.max_per_session ? limits_.max_per_session - held : 0;
}

void Leases::RecallForMemory(absl::Time now, bool pressure) {
  // Only sessions with a stream: the others could not hear a recall (and
  // are granted nothing).
  for (const auto& [session, stream] : streams_) {
    auto last = recalled_at_.find(session);
    if (last != recalled_at_.end() && now - last->second < limits_.recall_interval) continue;
    const size_t held = HeldBy(session);
    size_t want = 0;
    const size_t max = limits_.max_per_session;
    if (max > 0 && held * 10 > max * 9) want = held - max * 8 / 10;
    if (pressure && held > kRecallFloor) want = std::max(want, held / 4);
    want = std::min(want, limits_.recall_max);
    if (want == 0) continue;
    pb::LeaseEvent recall;
    recall.set_recall_caps(static_cast<uint32_t>(want));
    Send(session, recall);
    recalled_at_[session] = now;
    unanswered_recall_.try_emplace(session, now);  // the first one not answered
    recalled_total_ += want;
    VLOG(1) << "event=cap_recall session=" << session << " held=" << held << " want=" << want
            << " pressure=" << pressure;
  }
}

void Leases::Grant(const Request& r, const Reply& done, absl::Time now,
                   std::vector<DirLeaseGrant>* out) {
  const uint64_t session = r.session.value();
  if (!streams_.contains(session)) return;  // revokes could not reach it
  size_t room = Room(session);
  auto grant = [&](uint64_t dir, bool searchable) {
    const uint64_t seq = caps_.Grant(dir, session, caps::kLs, now, &room);
    if (seq == 0) return;
    out->push_back(
        DirLeaseGrant{InodeId(dir), seq, absl::ToInt64Milliseconds(caps_.lease()), searchable});
  };
  if (auto* op = r.As<req::Lookup>()) {
    grant(op->parent.value(), true);
  } else if (auto* op = r.As<req::Readdir>()) {
    grant(op->ino.value(), false);
  } else if (auto* op = r.As<req::Create>()) {
    grant(op->parent.value(), true);
  } else if (auto* op = r.As<req::Mkdir>()) {
    grant(op->parent.value(), true);
    if (done.attr.ino != 0) grant(done.attr.ino, false);  // new and empty
  } else if (auto* op = r.As<req::Symlink>()) {
    grant(op->parent.value(), true);
  } else if (auto* op = r.As<req::Link>()) {
    grant(op->new_parent.value(), true);
  } else if (auto* op = r.As<req::Unlink>()) {
    grant(op->parent.value(), true);
  } else if (auto* op = r.As<req::Rmdir>()) {
    grant(op->parent.value(), true);
  } else if (auto* op = r.As<req::Rename>()) {
    grant(op->parent.value(), true);
    if (op->new_parent != op->parent) grant(op->new_parent.value(), true);
  }
}

// ---- attribute caps

bool Leases::RevokeAttrs(SessionId session, const std::vector<uint64_t>& changed, absl::Time now,
                         absl::Time* until) {
  std::vector<CapTable::Revoke> revokes;
  bool blocked = false;
  for (uint64_t ino : changed) {
    blocked |= caps_.Conflicts(ino, session.value(), caps::kAttrs, now, &revokes, until);
  }
  SendRevokes(revokes);
  if (!revokes.empty()) {
    VLOG(1) << "event=attr_cap_revoke session=" << session << " n=" << revokes.size();
  }
  return blocked;
}

bool Leases::OtherWriter(uint64_t session, uint64_t ino) const {
  bool other = false;
  caps_.ForEachOpener(ino, [&](uint64_t id, uint32_t wanted, uint32_t) {
    other |= id != session && (wanted & caps::kFw);
  });
  return other;
}

void Leases::GrantAttrs(SessionId session, Reply* done, absl::Time now) {
  if (!streams_.contains(session.value())) return;  // revokes could not reach it
  const int64_t lease_ms = absl::ToInt64Milliseconds(caps_.lease());
  size_t room = Room(session.value());
  auto grant = [&](const fs::Attr& a) {
    // An inode with no links left is gone for everyone but its openers.
    if (a.ino == 0 || a.nlink == 0) return;
    if (OtherWriter(session.value(), a.ino)) return;
    // An inode shown twice (hard links in one listing) is granted twice
    // with the same seq: the client takes the later one as a refresh.
    const uint64_t seq = caps_.Grant(a.ino, session.value(), caps::kAttrs, now, &room);
    if (seq != 0) done->attr_caps.push_back(AttrCapGrant{InodeId(a.ino), seq, lease_ms});
  };
  grant(done->attr);
  grant(done->replaced);
  for (const fs::Attr& a : done->changed) grant(a);
  for (const fs::DirEntry& e : done->entries) {
    if (e.has_attr()) grant(e.attr);
  }
}

absl::Status Leases::CheckCaps(absl::Time now) const {
  if (limits_.max_per_session > 0) {
    absl::Status over;
    caps_.ForEachHolder([&](uint64_t session, size_t n) {
      if (over.ok() && n > limits_.max_per_session) {
        over = absl::InternalError(absl::StrCat("session ", session, " holds ", n,
                                                " caps, over its limit of ",
                                                limits_.max_per_session));
      }
    });
    if (!over.ok()) return over;
  }
  absl::Status broken;
  caps_.ForEachLive(now, [&](uint64_t ino, uint64_t session, uint32_t bits) {
    if (!broken.ok()) return;
    if ((bits & caps::kAttrs) != 0 && OtherWriter(session, ino)) {
      broken = absl::InternalError(absl::StrCat("session ", session, " holds ",
                                                caps::CapString(bits & caps::kAttrs), " on ", ino,
                                                ", which another session writes"));
      return;
    }
    if ((bits & (caps::kFb | caps::kFx)) == 0) return;
    // Buffering or exclusive: nobody else has the file open (a holder with
    // no lease stream could not be told to write through, and is not
    // counted: it is recalled when its stream is back or evicted).
    caps_.ForEachOpener(ino, [&](uint64_t other, uint32_t, uint32_t) {
      if (broken.ok() && other != session &&
          ((bits & caps::kFx) || streams_.contains(session))) {
        broken = absl::InternalError(absl::StrCat("session ", session, " holds ",
                                                  caps::CapString(bits), " on ", ino,
                                                  ", which session ", other, " has open too"));
      }
    });
  });
  return broken;
}

// ---- writers and recalls

void Leases::NoteOpen(SessionId session, uint64_t ino, const SessionState* state) {
  auto positive = [ino](const absl::flat_hash_map<uint64_t, int>& counts) {
    auto it = counts.find(ino);
    return it != counts.end() && it->second > 0;
  };
  uint32_t wanted = 0;
  if (state != nullptr && positive(state->opens)) wanted |= caps::kFr;
  if (state != nullptr && positive(state->opens_write)) wanted |= caps::kFw;
  caps_.SetWanted(ino, session.value(), wanted);
}

void Leases::Reclaimed(SessionId session, uint64_t ino, const SessionState* state) {
  NoteOpen(session, ino, state);
  // Opens reclaimed after a restart that share a file were shared before
  // it, so their writers were writing through already: nobody buffers.
  // (An open counted in service is not: its recall switched the writers
  // to write through first, which CheckCaps holds it to.)
  size_t openers = 0;
  std::vector<uint64_t> writers;
  caps_.ForEachOpener(ino, [&](uint64_t id, uint32_t w, uint32_t) {
    ++openers;
    if (w & caps::kFw) writers.push_back(id);
  });
  if (openers > 1) {
    for (uint64_t id : writers) caps_.SetBuffer(ino, id, false);
  }
}

bool Leases::MayBuffer(uint64_t session, uint64_t ino) const {
  // Not counted as a writer yet: assume it may.
  if (!(caps_.Wanted(ino, session) & caps::kFw)) return true;
  return caps_.Issued(ino, session) & caps::kFb;
}

void Leases::Opening(SessionId session, uint64_t ino) { ++opening_[ino][session.value()]; }

void Leases::EndOpening(SessionId session, uint64_t ino) {
  auto it = opening_.find(ino);
  if (it == opening_.end()) return;
  auto s = it->second.find(session.value());
  if (s != it->second.end() && --s->second <= 0) it->second.erase(s);
  if (it->second.empty()) opening_.erase(it);
}

std::pair<bool, uint64_t> Leases::BufferFor(SessionId session, uint64_t ino) {
  size_t openers = 0;
  bool writer = false;
  caps_.ForEachOpener(ino, [&](uint64_t, uint32_t wanted, uint32_t) {
    ++openers;
    writer |= (wanted & caps::kFw) != 0;
  });
  bool shared = openers > 1 && writer;
  // Another session's open of it is under way: it shares the file once
  // counted (a writer told to buffer now would not be recalled then).
  if (auto o = opening_.find(ino); o != opening_.end() && !shared) {
    for (const auto& [id, n] : o->second) shared |= id != session.value();
  }
  caps_.SetBuffer(ino, session.value(), !shared);
  return {shared, ++next_recall_seq_};
}

namespace {

// The file whose data or size `r` changed (0: none). A reservation of a
// shared appender is not (the bytes come with its next report), unless it
// carries them (a file whose data is inline).
uint64_t DataChangeOf(const Request& r) {
  if (auto* op = r.As<req::Written>()) {
    return op->append != 0 && op->inline_writes.empty() ? 0 : op->ino.value();
  }
  if (auto* op = r.As<req::Setattr>()) return (op->valid & posix::kSetSize) ? op->ino.value() : 0;
  return 0;
}

// The size to raise the other openers' kernels to after `r` (answered
// `reply`): 0 after a truncate that did not grow the file (nothing lowers a
// kernel's size).
uint64_t RaiseTo(const Request& r, const Reply& reply) {
  if (r.As<req::Setattr>() != nullptr && reply.attr.size <= reply.prior_size) return 0;
  return reply.attr.size;
}

// The byte at `size - 1` of the file after `r` (answered `reply`) when the
// request shows it: zero after a truncate up (a hole), the last inline byte
// written there. Empty: unknown (in objects).
std::string TailOf(const Request& r, const Reply& reply, uint64_t size) {
  if (size == 0) return {};
  if (r.As<req::Setattr>() != nullptr) return std::string(1, '\0');  // grown: a hole
  auto* op = r.As<req::Written>();
  if (op == nullptr || reply.inline_refused) return {};
  // The last extent that covers the byte wrote it.
  for (auto e = op->inline_writes.rbegin(); e != op->inline_writes.rend(); ++e) {
    const uint64_t at = op->append != 0 ? reply.append_offset : e->offset;
    if (at < size && size - at <= e->data.size()) return e->data.substr(size - 1 - at, 1);
  }
  return {};
}

}  // namespace

std::vector<Leases::RecallKey> Leases::Invalidate(const Request& request, const Reply& reply) {
  const uint64_t ino = DataChangeOf(request);
  if (ino == 0) return {};
  std::vector<uint64_t> others;
  caps_.ForEachOpener(ino, [&](uint64_t id, uint32_t, uint32_t) {
    if (id != request.session.value() && streams_.contains(id)) others.push_back(id);
  });
  if (others.empty()) return {};
  const uint64_t size = RaiseTo(request, reply);
  const std::string tail = TailOf(request, reply, size);
  std::vector<RecallKey> wanted;
  for (uint64_t id : others) {
    const RecallKey key{id, ino};
    const uint64_t seq = ++next_recall_seq_;
    invals_[key] = seq;
    pb::LeaseEvent event;
    event.set_ino(ino);
    event.set_seq(seq);
    event.set_inval(true);
    event.set_size(size);
    event.set_tail(tail);
    event.set_in_objects(!reply.attr.data_inline);
    Send(id, event);
    wanted.push_back(key);
  }
  if (!wanted.empty()) {
    VLOG(1) << "event=data_inval session=" << request.session << " n=" << wanted.size();
  }
  return wanted;
}

bool Leases::Invalidated(const std::vector<RecallKey>& wanted) const {
  return Unanswered(wanted, /*invals=*/true).empty();
}

void Leases::ForgetInvals(const std::vector<RecallKey>& wanted) {
  for (const RecallKey& key : wanted) invals_.erase(key);
}

std::vector<Leases::RecallKey> Leases::Recall(const Request& request,
                                              const Reply& reply,
                                              const std::vector<uint64_t>& touched,
                                              const std::vector<Cut>& trims,
                                              const Sessions& sessions,
                                              absl::flat_hash_set<RecallKey>* recalled,
                                              absl::flat_hash_set<RecallKey>* held) {
  // A flush's own report, and what cannot show a file's size. A move of
  // inline data comes from a flush too (the writers' own reports then find
  // the file moved); an atime moved by reads needs no writer's changes.
  const req::Inline* inline_op = request.As<req::Inline>();
  if (!caps_.AnyWriter() || request.Is<req::Written>() || request.Is<req::Release>() ||
      request.Is<req::Sync>() || request.Is<req::Atime>() ||
      (inline_op != nullptr && inline_op->uninline)) {
    return {};
  }
  // What the reply shows, and what the operation looked at: a permission
  // decision on a file's mode or owner (also one that failed) needs the
  // writer's own changes of them (MetaReply.attr_authority) first.
  const std::vector<uint64_t> shown = ShownInos(reply, touched);
  // An open makes the file shared with its writers: they write through
  // from then on, so no later look needs to recall them.
  const uint64_t opened = OpenedBy(request, reply);
  std::vector<RecallKey> wanted;
  absl::flat_hash_set<RecallKey> holds;  // of `wanted`: those asked to hold
  for (uint64_t ino : shown) {
    absl::InlinedVector<uint64_t, 4> writers;
    caps_.ForEachOpener(ino, [&](uint64_t id, uint32_t wanted, uint32_t) {
      if (wanted & caps::kFw) writers.push_back(id);
    });
    if (writers.empty()) continue;
    const bool hold = std::any_of(trims.begin(), trims.end(),
                                  [ino](const Cut& t) { return t.ino.value() == ino; });
    for (uint64_t id : writers) {
      if (id == request.session.value() || !streams_.contains(id)) continue;
      if (!sessions.HasOpen(SessionId(id), ino, /*write=*/true)) continue;
      // Told to write through: it buffers nothing (its write in flight is
      // concurrent with this request).
      if (!MayBuffer(id, ino) && !hold) continue;
      const RecallKey key{id, ino};
      const bool first = recalled->insert(key).second;
      // Recalled already when the run before had no truncate to hold it for.
      const bool hold_now = hold && held->insert(key).second;
      if (hold_now) holds.insert(key);
      if (first || hold_now) wanted.push_back(key);
    }
  }
  for (const RecallKey& key : wanted) {
    const bool hold = holds.contains(key);
    const bool write_through = key.second == opened && MayBuffer(key.first, key.second);
    // Already asked for another request (a hold, or a switch to write
    // through, is asked again).
    if (recalls_.contains(key) && !hold && !write_through) continue;
    const uint64_t seq = ++next_recall_seq_;
    recalls_[key] = seq;
    pb::LeaseEvent event;
    event.set_ino(key.second);
    event.set_seq(seq);
    event.set_flush(true);
    event.set_hold(hold);
    if (write_through) {
      // Fb is taken back: the open that shares the file waits for this
      // acknowledgement (the writer's buffered writes are flushed by then).
      event.set_write_through(true);
      event.set_caps(caps::kFb);
      caps_.SetBuffer(key.second, key.first, false);
    }
    if (hold) {
      holds_[key.second].insert(key.first);
      ++hold_requests_[key.second];
    }
    Send(key.first, event);
  }
  if (!wanted.empty()) {
    VLOG(1) << "event=write_recall session=" << request.session << " n=" << wanted.size();
  }
  return wanted;
}

bool Leases::Answered(const std::vector<RecallKey>& wanted) const {
  return Unanswered(wanted, /*invals=*/false).empty();
}

std::vector<SessionId> Leases::Unanswered(const std::vector<RecallKey>& wanted,
                                          bool invals) const {
  const auto& table = invals ? invals_ : recalls_;
  std::vector<SessionId> out;
  for (const RecallKey& key : wanted) {
    const SessionId session(key.first);
    if (table.contains(key) && std::find(out.begin(), out.end(), session) == out.end()) {
      out.push_back(session);
    }
  }
  return out;
}

void Leases::ForgetRecalls(const std::vector<RecallKey>& wanted) {
  for (const RecallKey& key : wanted) recalls_.erase(key);
}

bool Leases::MayGrantAttrAuthority(const Request& request, const Reply& reply,
                                   const Sessions& sessions) const {
  const fs::Attr& a = reply.attr;
  const req::Create* create = request.As<req::Create>();
  if (create == nullptr || !create->open || !reply.created ||
      !streams_.contains(request.session.value()) || (a.mode & S_IFMT) != S_IFREG ||
      !a.no_xattrs || (a.mode & (S_ISUID | S_ISGID)) != 0) {
    return false;
  }
  // The recall that ends it needs the session counted as a writer.
  return sessions.HasOpen(request.session, a.ino, /*write=*/true);
}

void Leases::Ack(SessionId session, const pb::LeaseAckRequest& request) {
  for (const pb::LeaseEvent& e : request.acks()) {
    if (e.inval()) {
      auto it = invals_.find(RecallKey{session.value(), e.ino()});
      if (it != invals_.end() && it->second == e.seq()) invals_.erase(it);
    } else if (e.flush()) {
      auto it = recalls_.find(RecallKey{session.value(), e.ino()});
      if (it != recalls_.end() && it->second == e.seq()) recalls_.erase(it);
    } else if (caps_.Ack(session.value(), e.ino(), e.seq(), e.caps())) {
      ++returns_;
      if (e.released()) {
        ++released_total_;
        unanswered_recall_.erase(session.value());
      }
    }
  }
}

// ---- holds

void Leases::EndHolds(const absl::flat_hash_set<RecallKey>& held) {
  for (const auto& [session, ino] : held) {
    auto it = hold_requests_.find(ino);
    if (it != hold_requests_.end() && --it->second <= 0) hold_requests_.erase(it);
  }
}

void Leases::MaybeReleaseHolds(uint64_t ino) {
  if (hold_requests_.contains(ino)) return;
  auto held = holds_.find(ino);
  if (held == holds_.end()) return;
  pb::LeaseEvent release;
  release.set_ino(ino);
  release.set_release(true);
  for (uint64_t session : held->second) Send(session, release);
  holds_.erase(held);
}

}  // namespace weft::mds
