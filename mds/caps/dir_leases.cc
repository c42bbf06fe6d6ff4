#include "mds/caps/dir_leases.h"

#include <algorithm>

namespace weft::mds {

absl::Time DirLeaseTable::ExpiryFrom(absl::Time now) const {
  // The client counts `lease_` from before this; the margin covers clocks
  // that tick at slightly different rates.
  return now + lease_ + lease_ / 20 + absl::Milliseconds(50);
}

uint64_t DirLeaseTable::Grant(uint64_t ino, uint64_t session, absl::Time now) {
  if (lease_ <= absl::ZeroDuration()) return 0;
  Dir& dir = dirs_[ino];
  if (dir.revoker != 0 && dir.revoker != session && now < dir.revoke_until) return 0;
  Holder& h = dir.holders[session];
  if (h.revoking) return 0;  // going away: the acknowledgement is on its way
  if (h.seq == 0 || h.expires <= now) h.seq = next_seq_++;
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
    if (h->second.expires <= now) {
      dir.holders.erase(h++);
      continue;
    }
    if (h->first != session || include_self) {
      if (!h->second.revoking) {
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
  it->second.holders.erase(h);
  if (it->second.idle()) dirs_.erase(it);
  return true;
}

void DirLeaseTable::DropSession(uint64_t session) {
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
    absl::erase_if(dir.holders, [now](const auto& h) { return h.second.expires <= now; });
    if (dir.revoker != 0 && dir.revoke_until <= now) dir.revoker = 0;
    if (dir.idle()) {
      dirs_.erase(it++);
    } else {
      ++it;
    }
  }
}

size_t DirLeaseTable::size() const {
  size_t n = 0;
  for (const auto& [ino, dir] : dirs_) n += dir.holders.size();
  return n;
}

}  // namespace weft::mds
