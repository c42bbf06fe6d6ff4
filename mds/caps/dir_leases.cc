#include "mds/caps/dir_leases.h"

#include <algorithm>

namespace weft::mds {

absl::Time DirLeaseTable::ExpiryFrom(absl::Time now) const {
  // The client counts `lease_` from before this; the margin covers clocks
  // that tick at slightly different rates.
  return now + lease_ + lease_ / 20 + absl::Milliseconds(50);
}

uint64_t DirLeaseTable::Grant(uint64_t ino, uint64_t session, absl::Time now, size_t* room) {
  if (lease_ <= absl::ZeroDuration()) return 0;
  auto d = dirs_.find(ino);
  if (d == dirs_.end()) {
    if (room != nullptr && *room == 0) {
      ++refused_total_;
      return 0;
    }
    d = dirs_.try_emplace(ino).first;
  }
  Dir& dir = d->second;
  if (dir.revoker != 0 && dir.revoker != session && now < dir.revoke_until) return 0;
  auto it = dir.holders.find(session);
  if (it == dir.holders.end()) {
    if (room != nullptr) {
      if (*room == 0) {
        ++refused_total_;
        if (dir.idle()) dirs_.erase(d);
        return 0;
      }
      --*room;
    }
    it = dir.holders.try_emplace(session).first;
    Added(session);
  }
  Holder& h = it->second;
  if (h.revoking) return 0;  // going away: the acknowledgement is on its way
  if (h.seq == 0 || !Alive(session, h, now)) h.seq = next_seq_++;
  h.expires = ExpiryFrom(now);
  return h.seq;
}

bool DirLeaseTable::Conflicts(uint64_t ino, uint64_t session, bool include_self, absl::Time now,
                              std::vector<Revoke>* to_send, absl::Time* wait_until) {
  auto it = dirs_.find(ino);
  if (it == dirs_.end()) return false;
  Dir& dir = it->second;
  bool alive = false;
  absl::Time last = absl::InfinitePast();
  for (auto h = dir.holders.begin(); h != dir.holders.end();) {
    if (!Alive(h->first, h->second, now)) {
      Removed(h->first);
      dir.holders.erase(h++);
      continue;
    }
    if (h->first != session || include_self) {
      if (!h->second.revoking) {
        // Renewals stop counting for it: its end is frozen at the latest
        // its holder may trust it.
        h->second.expires = std::max(h->second.expires, RenewedUntil(h->first));
        h->second.revoking = true;
        to_send->push_back({h->first, ino, h->second.seq});
      }
      alive = true;
      last = std::max(last, h->second.expires);
    }
    ++h;
  }
  if (alive) {
    dir.revoker = session;
    dir.revoke_until = last;
    *wait_until = std::min(*wait_until, last);
  } else if (dir.revoker == session) {
    dir.revoker = 0;
  }
  if (dir.idle()) dirs_.erase(it);
  return alive;
}

bool DirLeaseTable::Ack(uint64_t session, uint64_t ino, uint64_t seq) {
  auto it = dirs_.find(ino);
  if (it == dirs_.end()) return false;
  auto h = it->second.holders.find(session);
  if (h == it->second.holders.end() || h->second.seq != seq) return false;
  Removed(session);
  it->second.holders.erase(h);
  if (it->second.idle()) dirs_.erase(it);
  return true;
}

void DirLeaseTable::DropSession(uint64_t session) {
  renewed_.erase(session);
  if (auto h = held_.find(session); h != held_.end()) {
    held_total_ -= h->second;
    held_.erase(h);
  }
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    it->second.holders.erase(session);
    if (it->second.revoker == session) it->second.revoker = 0;
    if (it->second.idle()) {
      dirs_.erase(it++);
    } else {
      ++it;
    }
  }
}

void DirLeaseTable::Expire(absl::Time now) {
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    Dir& dir = it->second;
    absl::erase_if(dir.holders, [this, now](const auto& h) {
      if (Alive(h.first, h.second, now)) return false;
      Removed(h.first);
      return true;
    });
    if (dir.revoker != 0 && dir.revoke_until <= now) dir.revoker = 0;
    if (dir.idle()) {
      dirs_.erase(it++);
    } else {
      ++it;
    }
  }
}

void DirLeaseTable::Renew(uint64_t session, absl::Time now) {
  if (lease_ <= absl::ZeroDuration()) return;
  renewed_[session] = ExpiryFrom(now);
}

void DirLeaseTable::Added(uint64_t session) {
  ++held_[session];
  ++held_total_;
  ++added_total_;
}

void DirLeaseTable::Removed(uint64_t session, size_t n) {
  auto it = held_.find(session);
  if (it == held_.end()) return;
  const size_t gone = std::min(n, it->second);
  it->second -= gone;
  held_total_ -= gone;
  if (it->second == 0) held_.erase(it);
}

}  // namespace weft::mds
