#include "mds/caps/cap_table.h"

#include <algorithm>

namespace weft::mds {

absl::Time CapTable::ExpiryFrom(absl::Time now) const {
  // The client counts `lease_` from before this; the margin covers clocks
  // that tick at slightly different rates.
  return now + lease_ + lease_ / 20 + absl::Milliseconds(50);
}

uint64_t CapTable::Grant(uint64_t ino, uint64_t session, uint32_t bits, absl::Time now,
                         size_t* room) {
  if (lease_ <= absl::ZeroDuration() || bits == 0) return 0;
  auto in = inodes_.find(ino);
  if (in == inodes_.end()) in = inodes_.try_emplace(ino).first;
  Inode& inode = in->second;
  if (inode.revoker != 0 && inode.revoker != session && now < inode.revoke_until &&
      (inode.revoke_bits & bits) != 0) {
    return 0;
  }
  auto it = inode.holders.find(session);
  if (it != inode.holders.end()) {
    Cap& cap = it->second;
    // Going away: the acknowledgement is on its way.
    if (cap.revoking & bits) return 0;
    if (!Prune(session, &cap, now)) {
      // Nothing left of it: a cap starts over.
      cap.seq = 0;
      cap.revoking = 0;
      cap.retired = 0;
    }
  }
  if (it == inode.holders.end() || (it->second.issued & caps::kLeased) == 0) {
    if (room != nullptr) {
      if (*room == 0) {
        ++refused_total_;
        if (it != inode.holders.end() && it->second.issued == 0 && it->second.wanted == 0) {
          Removed(session, it->second);
          inode.holders.erase(it);
        }
        if (inode.idle()) inodes_.erase(in);
        return 0;
      }
      --*room;
    }
    ++added_total_;
  }
  if (it == inode.holders.end()) {
    it = inode.holders.try_emplace(session).first;
    Added(session);
  }
  Cap& cap = it->second;
  if (cap.seq == 0 || (cap.retired & bits) != 0) {
    cap.seq = next_seq_++;
    cap.retired = 0;
  }
  SetIssued(session, &cap, cap.issued | bits);
  cap.expires = ExpiryFrom(now);
  if (cap.revoking != 0) {  // the bits being revoked live as long: Expire looks then
    frozen_ = true;
    frozen_until_ = std::max(frozen_until_, cap.expires);
  }
  return cap.seq;
}

bool CapTable::Prune(uint64_t session, Cap* cap, absl::Time now) {
  const uint32_t alive = AliveBits(session, *cap, now);
  if (alive != cap->issued) {
    cap->retired |= cap->issued & ~alive;
    cap->revoking &= alive;
    SetIssued(session, cap, alive);
  }
  return alive != 0 || cap->wanted != 0;
}

bool CapTable::Conflicts(uint64_t ino, uint64_t session, uint32_t bits, absl::Time now,
                         std::vector<Revoke>* to_send, absl::Time* wait_until) {
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return false;
  Inode& inode = it->second;
  bool alive = false;
  absl::Time last = absl::InfinitePast();
  for (auto h = inode.holders.begin(); h != inode.holders.end();) {
    Cap& cap = h->second;
    if (!Prune(h->first, &cap, now)) {
      Removed(h->first, cap);
      inode.holders.erase(h++);
      continue;
    }
    const uint32_t go = h->first == session ? 0 : cap.issued & bits;
    if (go != 0) {
      if ((cap.revoking & go) != go) {
        // Renewals stop counting for these bits: the cap's end is frozen at
        // the latest its holder may trust them.
        cap.expires = std::max(cap.expires, RenewedUntil(h->first));
        frozen_ = true;
        frozen_until_ = std::max(frozen_until_, cap.expires);
        to_send->push_back({h->first, ino, cap.seq, go & ~cap.revoking});
        cap.revoking |= go;
      }
      alive = true;
      last = std::max(last, cap.expires);
    }
    ++h;
  }
  if (alive) {
    // Another changer's mark stays in force for its bits until it ends.
    absl::Time mark_until = last;
    if (inode.revoker != session && inode.revoker != 0 && inode.revoke_until > now) {
      mark_until = std::max(last, inode.revoke_until);
    } else if (inode.revoker != session) {
      inode.revoke_bits = 0;
    }
    inode.revoker = session;
    inode.revoke_bits |= bits;
    inode.revoke_until = mark_until;
    frozen_ = true;
    frozen_until_ = std::max(frozen_until_, mark_until);
    *wait_until = std::min(*wait_until, last);
  } else if (inode.revoker == session) {
    inode.revoker = 0;
    inode.revoke_bits = 0;
  }
  if (inode.idle()) inodes_.erase(it);
  return alive;
}

bool CapTable::Ack(uint64_t session, uint64_t ino, uint64_t seq, uint32_t bits) {
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return false;
  auto h = it->second.holders.find(session);
  if (h == it->second.holders.end() || h->second.seq != seq) return false;
  Cap& cap = h->second;
  // Only leased bits are given back this way: file bits follow the opens
  // (what a client sends cannot make the MDS forget it buffers).
  const uint32_t gone = cap.issued & bits & caps::kLeased;
  if (gone == 0) return false;
  cap.retired |= gone;
  cap.revoking &= ~gone;
  SetIssued(session, &cap, cap.issued & ~gone);
  if (cap.issued == 0 && cap.wanted == 0) {
    Removed(session, cap);
    it->second.holders.erase(h);
    if (it->second.idle()) inodes_.erase(it);
  }
  return true;
}

uint32_t CapTable::Held(uint64_t ino, uint64_t session, absl::Time now) const {
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return 0;
  auto h = it->second.holders.find(session);
  return h == it->second.holders.end() ? 0 : AliveBits(session, h->second, now);
}

void CapTable::DropSession(uint64_t session) {
  renewed_.erase(session);
  if (auto h = held_.find(session); h != held_.end()) {
    total_.count -= h->second.count;
    total_.wanted_fw -= h->second.wanted_fw;
    total_.leased -= h->second.leased;
    for (int i = 0; i < weft::caps::kBitCount; ++i) total_.bits[i] -= h->second.bits[i];
    held_.erase(h);
  }
  for (auto it = inodes_.begin(); it != inodes_.end();) {
    if (it->second.holders.erase(session) > 0) UpdateExclusive(&it->second);
    if (it->second.revoker == session) {
      it->second.revoker = 0;
      it->second.revoke_bits = 0;
    }
    if (it->second.idle()) {
      inodes_.erase(it++);
    } else {
      ++it;
    }
  }
}

bool CapTable::MayHaveRunOut(absl::Time now) const {
  if (frozen_ && now > frozen_until_) return true;
  for (const auto& [session, counts] : held_) {
    if (counts.leased > 0 && RenewedUntil(session) <= now) return true;
  }
  return false;
}

void CapTable::Expire(absl::Time now) {
  if (!MayHaveRunOut(now)) return;
  if (now > frozen_until_) frozen_ = false;
  for (auto it = inodes_.begin(); it != inodes_.end();) {
    Inode& inode = it->second;
    absl::erase_if(inode.holders, [this, now](auto& h) {
      if (Prune(h.first, &h.second, now)) return false;
      Removed(h.first, h.second);
      return true;
    });
    if (inode.revoker != 0 && inode.revoke_until <= now) {
      inode.revoker = 0;
      inode.revoke_bits = 0;
    }
    if (inode.idle()) {
      inodes_.erase(it++);
    } else {
      ++it;
    }
  }
}

void CapTable::DropLeased(uint64_t session) {
  renewed_.erase(session);
  for (auto it = inodes_.begin(); it != inodes_.end();) {
    Inode& inode = it->second;
    if (auto h = inode.holders.find(session); h != inode.holders.end()) {
      Cap& cap = h->second;
      cap.retired |= cap.issued & ~caps::kFile;
      cap.revoking &= caps::kFile;
      SetIssued(session, &cap, cap.issued & caps::kFile);
      if (cap.issued == 0 && cap.wanted == 0) {
        Removed(session, cap);
        inode.holders.erase(h);
      }
    }
    if (inode.idle()) {
      inodes_.erase(it++);
    } else {
      ++it;
    }
  }
}

void CapTable::SetWanted(uint64_t ino, uint64_t session, uint32_t wanted) {
  wanted &= caps::kFr | caps::kFw;
  if (wanted & caps::kFw) wanted |= caps::kFr;
  auto in = inodes_.find(ino);
  if (in == inodes_.end()) {
    if (wanted == 0) return;
    in = inodes_.try_emplace(ino).first;
  }
  Inode& inode = in->second;
  auto it = inode.holders.find(session);
  if (it == inode.holders.end()) {
    if (wanted == 0) return;  // (an inode with no holder is not kept: idle() was false)
    it = inode.holders.try_emplace(session).first;
    Added(session);
    it->second.seq = next_seq_++;
  }
  Cap& cap = it->second;
  const bool new_writer = (wanted & caps::kFw) && !(cap.wanted & caps::kFw);
  SetWantedBits(session, &cap, wanted);
  // A writer new to the file may buffer when nobody else has it open (the
  // caller decides again: Leases::BufferFor); a writer reclaiming its open
  // after a restart beside another opener was writing through already.
  bool alone = true;
  for (const auto& [id, other] : inode.holders) alone &= id == session || other.wanted == 0;
  uint32_t file = 0;
  if (wanted != 0) file = caps::kFr | caps::kFc;
  if (wanted & caps::kFw) {
    file |= caps::kFw | (new_writer ? (alone ? caps::kFb : 0) : cap.issued & caps::kFb);
  }
  SetIssued(session, &cap, (cap.issued & ~caps::kFile) | file);
  if (cap.issued == 0 && cap.wanted == 0) {
    Removed(session, cap);
    inode.holders.erase(it);
  }
  UpdateExclusive(&inode);
  if (inode.idle()) inodes_.erase(in);
}

void CapTable::SetBuffer(uint64_t ino, uint64_t session, bool may_buffer) {
  auto in = inodes_.find(ino);
  if (in == inodes_.end()) return;
  auto it = in->second.holders.find(session);
  if (it == in->second.holders.end() || !(it->second.wanted & caps::kFw)) return;
  Cap& cap = it->second;
  SetIssued(session, &cap, may_buffer ? cap.issued | caps::kFb : cap.issued & ~caps::kFb);
}

uint32_t CapTable::Wanted(uint64_t ino, uint64_t session) const {
  auto in = inodes_.find(ino);
  if (in == inodes_.end()) return 0;
  auto it = in->second.holders.find(session);
  return it == in->second.holders.end() ? 0 : it->second.wanted;
}

uint32_t CapTable::Issued(uint64_t ino, uint64_t session) const {
  auto in = inodes_.find(ino);
  if (in == inodes_.end()) return 0;
  auto it = in->second.holders.find(session);
  return it == in->second.holders.end() ? 0 : it->second.issued;
}

void CapTable::SetWantedBits(uint64_t session, Cap* cap, uint32_t wanted) {
  const bool was = cap->wanted & caps::kFw;
  const bool is = wanted & caps::kFw;
  if (was != is) {
    Counts& mine = held_[session];
    mine.wanted_fw += is ? 1 : -1;
    total_.wanted_fw += is ? 1 : -1;
  }
  cap->wanted = wanted;
}

void CapTable::UpdateExclusive(Inode* inode) {
  size_t openers = 0;
  for (const auto& [session, cap] : inode->holders) openers += cap.wanted != 0;
  for (auto& [session, cap] : inode->holders) {
    const bool exclusive = openers == 1 && (cap.wanted & caps::kFw);
    const uint32_t issued = exclusive ? cap.issued | caps::kFx : cap.issued & ~caps::kFx;
    if (issued != cap.issued) SetIssued(session, &cap, issued);
  }
}

void CapTable::Renew(uint64_t session, absl::Time now) {
  if (lease_ <= absl::ZeroDuration()) return;
  renewed_[session] = ExpiryFrom(now);
}

void CapTable::SetIssued(uint64_t session, Cap* cap, uint32_t issued) {
  const uint32_t changed = cap->issued ^ issued;
  if (changed != 0) {
    Counts& mine = held_[session];
    const bool was = (cap->issued & caps::kLeased) != 0;
    const bool is = (issued & caps::kLeased) != 0;
    if (was != is) {
      mine.leased += is ? 1 : -1;
      total_.leased += is ? 1 : -1;
    }
    for (int i = 0; i < weft::caps::kBitCount; ++i) {
      const uint32_t bit = 1u << i;
      if ((changed & bit) == 0) continue;
      if (issued & bit) {
        ++mine.bits[i];
        ++total_.bits[i];
      } else {
        --mine.bits[i];
        --total_.bits[i];
      }
    }
  }
  cap->issued = issued;
}

void CapTable::Added(uint64_t session) {
  ++held_[session].count;
  ++total_.count;
}

void CapTable::Removed(uint64_t session, const Cap& cap) {
  auto it = held_.find(session);
  if (it == held_.end()) return;
  Counts& mine = it->second;
  for (int i = 0; i < weft::caps::kBitCount; ++i) {
    if ((cap.issued & (1u << i)) && mine.bits[i] > 0) {
      --mine.bits[i];
      --total_.bits[i];
    }
  }
  if ((cap.issued & caps::kLeased) && mine.leased > 0) {
    --mine.leased;
    --total_.leased;
  }
  if ((cap.wanted & caps::kFw) && mine.wanted_fw > 0) {
    --mine.wanted_fw;
    --total_.wanted_fw;
  }
  if (mine.count > 0) {
    --mine.count;
    --total_.count;
  }
  if (mine.count == 0) held_.erase(it);
}

}  // namespace weft::mds
