#include "mds/sessions/sessions.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/log/log.h"
#include "mds/fs/names.h"

namespace weft::mds {

std::string SessionKey(SessionId id) { return absl::StrFormat("%016x", id.value()); }

Sessions::Sessions(uint32_t fs, uint32_t rank)
    : fs_(fs), rank_(rank), next_id_(SessionId::First(fs, rank)) {}

SessionState* Sessions::Find(SessionId id) {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : &it->second;
}

const SessionState* Sessions::Find(SessionId id) const {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : &it->second;
}

SessionId Sessions::TakeId() {
  const SessionId id = next_id_;
  next_id_ = SessionId(id.value() + 1);
  return id;
}

void Sessions::Apply(const Event& ev) {
  for (const SessionHeader& header : ev.sessions) {
    const SessionId id = header.id;
    if (id >= next_id_) next_id_ = SessionId(id.value() + 1);
    if (header.closed) {
      sessions_.erase(id);
      closed_.insert(id);
      continue;
    }
    SessionState& s = sessions_[id];
    s.rec.set_id(id.value());
    s.rec.set_client(header.client);
    s.rec.set_opened_ms(header.opened_ms);
    s.rec.set_closed(false);
    s.rec.set_osd_client(header.osd_client);
    s.dirty = true;
    closed_.erase(id);
  }
  if (ev.tid.value() == 0) return;
  SessionState* s = Find(ev.session);
  if (s == nullptr) return;  // closed since (a replay of its last requests)
  const uint64_t tid = ev.tid.value();
  (*s->rec.mutable_completed())[tid] = ev.reply;
  s->completed_seq[tid] = ev.seq;
  auto& completed = *s->rec.mutable_completed();
  for (auto c = completed.begin(); c != completed.end();) {
    if (c->first < ev.oldest_tid.value()) {
      s->completed_seq.erase(c->first);
      c = completed.erase(c);
    } else {
      ++c;
    }
  }
  s->dirty = true;
}

bool Sessions::HasOpen(SessionId session, uint64_t ino, bool write) const {
  const SessionState* s = Find(session);
  if (s == nullptr) return false;
  const auto& table = write ? s->opens_write : s->opens;
  auto it = table.find(ino);
  return it != table.end() && it->second > 0;
}

SessionId Sessions::OtherHolder(uint64_t ino, SessionId except, bool write) const {
  // The lowest id of them: whatever order the table iterates in (it depends
  // on where the heap put it), the same sessions give the same answer.
  SessionId found;
  for (const auto& [id, s] : sessions_) {
    if (id == except || (found.value() != 0 && id > found)) continue;
    const auto& table = write ? s.opens_write : s.opens;
    auto it = table.find(ino);
    if (it != table.end() && it->second > 0) found = id;
  }
  return found;
}

void Sessions::Opened(SessionId session, uint64_t ino, bool write) {
  SessionState* s = Find(session);
  CHECK(s != nullptr) << "open in session " << session << ", which does not exist";
  ++s->opens[ino];
  if (write) ++s->opens_write[ino];
}

void Sessions::Answered(SessionId session, RequestId tid, RequestId oldest, std::string reply) {
  SessionState* s = Find(session);
  if (s == nullptr || tid.value() == 0) return;
  s->answered.erase(s->answered.begin(), s->answered.lower_bound(oldest.value()));
  // A client keeps few requests unanswered; this bounds one that does not.
  constexpr size_t kAnsweredMax = 4096;
  while (s->answered.size() >= kAnsweredMax) s->answered.erase(s->answered.begin());
  s->answered[tid.value()] = std::move(reply);
}

void Sessions::TakeDirty(FlushBatch* batch) {
  const std::string object = TableObject(fs_, rank_, "sessions");
  ObjectUpdate update;
  for (auto& [id, s] : sessions_) {
    if (!s.dirty) continue;
    s.dirty = false;
    update.set.emplace_back(SessionKey(id), s.rec.SerializeAsString());
  }
  for (SessionId id : closed_) update.rm.push_back(SessionKey(id));
  closed_.clear();
  if (update.set.empty() && update.rm.empty()) return;
  // Rows in key order: the same flush writes the same request.
  std::sort(update.set.begin(), update.set.end());
  batch->updates[object] = std::move(update);
}

void Sessions::LoadTable(const std::map<std::string, std::string>& rows) {
  for (const auto& [key, value] : rows) {
    pb::SessionRec rec;
    if (!rec.ParseFromString(value)) {
      LOG(WARNING) << "event=bad_session_record key=" << key;
      continue;
    }
    const SessionId id(rec.id());
    sessions_[id].rec = rec;
    if (id >= next_id_) next_id_ = SessionId(id.value() + 1);
  }
}

}  // namespace weft::mds
