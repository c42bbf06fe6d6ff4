// The simulated clients' requests: each decided from what the model knows
// when it is sent, with the answer the model expects (tests/sim/model.h).
#include "tests/sim/world.h"

namespace weft::sim {

// ---- the workload

std::pair<uint64_t, std::string> World::OwnName(Client& c) {
  if (c.names.empty()) return {c.home, Fresh(c)};
  auto it = c.names.begin();
  std::advance(it, rng_.Below(c.names.size()));
  return *it;
}

void World::Made(Client& c, uint64_t dir, const std::string& name, uint64_t ino, uint32_t mode,
                 const std::string& target) {
  model_.Make(dir, name, ino, mode, target);
  model_.SetOwner(ino, c.uid, c.gid);
  c.names.insert({dir, name});
}

Plan World::MakeMkdir(Client& c) {
  const uint64_t dir = rng_.Chance(0.2) ? shared_ : rng_.Pick(c.dirs);
  const std::string name = Fresh(c);
  Plan p;
  p.what = "mkdir";
  p.request.mutable_mkdir()->set_parent(dir);
  p.request.mutable_mkdir()->set_name(name);
  p.request.mutable_mkdir()->set_mode(0755);
  if (Denied(c, dir, true)) {
    p.check = Expect(EACCES);
    return p;
  }
  p.check = Expect(0, [this, &c, dir, name](const pb::MetaReply& r) -> std::string {
    Made(c, dir, name, r.attr().ino(), S_IFDIR | 0755);
    c.dirs.push_back(r.attr().ino());
    return "";
  });
  return p;
}

Plan World::MakeCreate(Client& c) {
  Plan p;
  p.what = "create";
  auto [dir, name] = rng_.Chance(0.8) ? std::make_pair(rng_.Pick(c.dirs), Fresh(c)) : OwnName(c);
  if (rng_.Chance(0.1)) dir = shared_;
  std::optional<uint64_t> existing = model_.Lookup(dir, name);
  const bool open = rng_.Chance(0.5);
  const bool exclusive = rng_.Chance(0.5);
  pb::CreateOp* op = p.request.mutable_create();
  op->set_parent(dir);
  op->set_name(name);
  op->set_mode(rng_.Chance(0.1) ? (S_IFIFO | 0644) : 0644);
  op->set_open(open);
  op->set_exclusive(exclusive);
  op->set_open_flags(O_RDWR | O_CREAT);
  const uint32_t mode = (op->mode() & S_IFMT) == 0 ? (S_IFREG | 0644) : op->mode();
  // Search permission first; write permission only for a name that is
  // made (an existing one is EEXIST first, as in Linux).
  if (Denied(c, dir, false)) {
    p.check = Expect(EACCES);
    return p;
  }
  if (existing) {
    const Node* n = model_.Find(*existing);
    if (!open || exclusive) {
      p.check = Expect(EEXIST);
    } else if (n->IsDir()) {
      p.check = Expect(EISDIR);
    } else if ((n->mode & S_IFMT) == S_IFLNK) {
      p.check = Expect(ELOOP);
    } else {
      const uint64_t ino = *existing;
      p.check = Expect(0, [this, &c, ino](const pb::MetaReply& r) -> std::string {
        if (r.attr().ino() != ino)
          return absl::StrCat("opened inode ", r.attr().ino(), " not ", ino);
        model_.Open(ino);
        ++c.handles[ino];
        ++c.writers[ino];
        c.inline_files[ino] = r.attr().data_inline();
        return "";
      });
    }
    return p;
  }
  if (Denied(c, dir, true)) {
    p.check = Expect(EACCES);
    return p;
  }
  p.check = Expect(0, [this, &c, dir, name, open, mode](const pb::MetaReply& r) -> std::string {
    const uint64_t ino = r.attr().ino();
    Made(c, dir, name, ino, mode);
    if (open) {
      model_.Open(ino);
      ++c.handles[ino];
      ++c.writers[ino];
    }
    c.inline_files[ino] = r.attr().data_inline();
    return "";
  });
  return p;
}

Plan World::MakeSymlink(Client& c) {
  const uint64_t dir = rng_.Pick(c.dirs);
  const std::string name = Fresh(c);
  const std::string target = absl::StrCat("target-", rng_.Below(1000));
  Plan p;
  p.what = "symlink";
  p.request.mutable_symlink()->set_parent(dir);
  p.request.mutable_symlink()->set_name(name);
  p.request.mutable_symlink()->set_target(target);
  if (Denied(c, dir, true)) {
    p.check = Expect(EACCES);
    return p;
  }
  p.check = Expect(0, [this, &c, dir, name, target](const pb::MetaReply& r) -> std::string {
    Made(c, dir, name, r.attr().ino(), S_IFLNK | 0777, target);
    return "";
  });
  return p;
}

Plan World::MakeLink(Client& c) {
  auto [dir, name] = OwnName(c);
  std::optional<uint64_t> ino = model_.Lookup(dir, name);
  const uint64_t to = rng_.Pick(c.dirs);
  const std::string new_name = Fresh(c);
  Plan p;
  p.what = "link";
  pb::LinkOp* op = p.request.mutable_link();
  op->set_ino(ino ? *ino : 0x7ffff000);
  op->set_new_parent(to);
  op->set_new_name(new_name);
  if (!ino) {
    p.check = Expect(ESTALE);
  } else if (model_.Find(*ino)->IsDir()) {
    p.check = Expect(EPERM);
  } else if (Denied(c, to, true)) {
    p.check = Expect(EACCES);
  } else {
    const uint64_t target = *ino;
    rstats_ok_ = false;  // the MDS counts a hard-linked file per name
    p.check = Expect(0, [this, &c, target, to, new_name](const pb::MetaReply&) -> std::string {
      model_.Link(target, to, new_name);
      c.names.insert({to, new_name});
      return "";
    });
  }
  return p;
}

Plan World::MakeUnlink(Client& c, bool rmdir) {
  auto [dir, name] = rng_.Chance(0.9) ? OwnName(c) : std::make_pair(rng_.Pick(c.dirs), Fresh(c));
  std::optional<uint64_t> ino = model_.Lookup(dir, name);
  Plan p;
  p.what = rmdir ? "rmdir" : "unlink";
  if (rmdir) {
    p.request.mutable_rmdir()->set_parent(dir);
    p.request.mutable_rmdir()->set_name(name);
  } else {
    p.request.mutable_unlink()->set_parent(dir);
    p.request.mutable_unlink()->set_name(name);
  }
  // Search permission, the name (ENOENT), then write permission: Linux's order.
  if (Denied(c, dir, false)) {
    p.check = Expect(EACCES);
    return p;
  }
  if (!ino) {
    p.check = Expect(ENOENT);
    return p;
  }
  if (Denied(c, dir, true)) {
    p.check = Expect(EACCES);
    return p;
  }
  const Node* n = model_.Find(*ino);
  if (rmdir && !n->IsDir()) {
    p.check = Expect(ENOTDIR);
  } else if (!rmdir && n->IsDir()) {
    p.check = Expect(EISDIR);
  } else if (rmdir && !model_.Empty(*ino)) {
    p.check = Expect(ENOTEMPTY);
  } else {
    const uint64_t gone = *ino;
    const bool was_dir = n->IsDir();
    p.check = Expect(0, [this, &c, dir, name, gone, was_dir](const pb::MetaReply&) -> std::string {
      model_.Unlink(dir, name);
      c.names.erase({dir, name});
      if (was_dir) std::erase(c.dirs, gone);
      return "";
    });
  }
  return p;
}

Plan World::MakeRename(Client& c) {
  auto [dir, name] = OwnName(c);
  std::optional<uint64_t> src = model_.Lookup(dir, name);
  uint64_t to = rng_.Chance(0.15) ? shared_ : rng_.Pick(c.dirs);
  std::string new_name = Fresh(c);
  if (rng_.Chance(0.3) && !c.names.empty()) std::tie(to, new_name) = OwnName(c);
  std::optional<uint64_t> dst = model_.Lookup(to, new_name);
  const uint32_t flags = rng_.Chance(0.1)   ? kRenameNoReplace
                         : rng_.Chance(0.1) ? kRenameExchange
                                            : 0;
  Plan p;
  p.what = "rename";
  pb::RenameOp* op = p.request.mutable_rename();
  op->set_parent(dir);
  op->set_name(name);
  op->set_new_parent(to);
  op->set_new_name(new_name);
  op->set_flags(flags);
  const bool same = dir == to && name == new_name;
  // In the MDS's order (mds/ops/rename.cc): search permission on both
  // directories, the names, then write permission on both.
  if (Denied(c, dir, false) || Denied(c, to, false)) {
    p.check = Expect(EACCES);
    return p;
  }
  if (!src) {
    p.check = Expect(ENOENT);
    return p;
  }
  const Node* s = model_.Find(*src);
  const Node* d = dst ? model_.Find(*dst) : nullptr;
  int want = 0;
  if ((flags & kRenameNoReplace) && dst) {
    want = EEXIST;
  } else if (same) {
    want = 0;
  } else if ((flags & kRenameExchange) && !dst) {
    want = ENOENT;
  } else if (dst && *dst == *src) {
    want = 0;
  } else if (Denied(c, dir, true) || Denied(c, to, true)) {
    want = EACCES;
  } else if (s->IsDir() && dir != to && model_.Under(to, *src)) {
    want = EINVAL;
  } else if ((flags & kRenameExchange) && d->IsDir() && dir != to && model_.Under(dir, *dst)) {
    want = EINVAL;
  } else if (flags & kRenameExchange) {
    want = 0;
  } else if (dst && s->IsDir() && !d->IsDir()) {
    want = ENOTDIR;
  } else if (dst && !s->IsDir() && d->IsDir()) {
    want = EISDIR;
  } else if (dst && d->IsDir() && !model_.Empty(*dst)) {
    want = ENOTEMPTY;
  }
  const bool noop = same || (dst && *dst == *src);
  const bool exchange = (flags & kRenameExchange) != 0;
  const std::optional<uint64_t> victim = dst;
  p.check = Expect(want,
                   [this, &c, dir, name, to, new_name, noop, exchange,
                    victim](const pb::MetaReply&) -> std::string {
                     if (noop) return "";
                     if (victim && !exchange) {
                       if (const Node* v = model_.Find(*victim); v != nullptr && v->IsDir()) {
                         std::erase(c.dirs, *victim);
                       }
                     }
                     model_.Rename(dir, name, to, new_name, exchange);
                     if (!exchange) {
                       c.names.erase({dir, name});
                       c.names.insert({to, new_name});
                     }
                     return "";
                   });
  return p;
}

Plan World::MakeSetattr(Client& c) {
  auto [dir, name] = OwnName(c);
  std::optional<uint64_t> ino = model_.Lookup(dir, name);
  Plan p;
  p.what = "setattr";
  pb::SetattrOp* op = p.request.mutable_setattr();
  op->set_ino(ino ? *ino : 0x7ffff001);
  if (!ino) {
    op->set_valid(pb::SA_MODE);
    op->set_mode(0600);
    p.check = Expect(ESTALE);
    return p;
  }
  const Node* n = model_.Find(*ino);
  const uint64_t target = *ino;
  if (rng_.Chance(0.5) && (n->mode & S_IFMT) != S_IFLNK) {
    // Directories now and then lose their owner's search permission.
    static const uint32_t kPerms[] = {0600, 0644, 0755, 0700, 0640};
    static const uint32_t kDirPerms[] = {0755, 0700, 0711, 0750, 0600};
    const uint32_t perm = n->IsDir() ? kDirPerms[rng_.Below(5)] : kPerms[rng_.Below(5)];
    op->set_valid(pb::SA_MODE);
    op->set_mode(perm);
    p.check = Expect(0, [this, target, perm](const pb::MetaReply&) -> std::string {
      model_.SetMode(target, perm);
      return "";
    });
    return p;
  }
  const uint64_t size = rng_.Below(3) == 0 ? 0 : rng_.Below(300000);
  op->set_valid(pb::SA_SIZE);
  op->set_size(size);
  if (n->IsDir()) {
    p.check = Expect(EISDIR);
  } else if (!n->IsReg()) {
    p.check = Expect(EINVAL);
  } else {
    p.check = Expect(0, [this, target, size](const pb::MetaReply& r) -> std::string {
      model_.SetSize(target, size);
      if (r.attr().size() != size) return absl::StrCat("size ", r.attr().size(), " after truncate");
      return "";
    });
  }
  return p;
}

Plan World::MakeXattr(Client& c) {
  auto [dir, name] = OwnName(c);
  std::optional<uint64_t> ino = model_.Lookup(dir, name);
  Plan p;
  const std::string key = rng_.Chance(0.5) ? "user.a" : "user.b";
  if (!ino) {
    p.what = "getxattr";
    p.request.mutable_getxattr()->set_ino(0x7ffff002);
    p.request.mutable_getxattr()->set_name(key);
    p.check = Expect(ESTALE);
    return p;
  }
  const Node* n = model_.Find(*ino);
  const uint64_t target = *ino;
  const bool has = n->xattrs.contains(key);
  const bool user_ok = n->IsReg() || n->IsDir();
  if (rng_.Chance(0.3)) {
    p.what = "removexattr";
    p.request.mutable_removexattr()->set_ino(target);
    p.request.mutable_removexattr()->set_name(key);
    if (!user_ok) {
      p.check = Expect(EPERM);
    } else if (!has) {
      p.check = Expect(ENODATA);
    } else {
      p.check = Expect(0, [this, target, key](const pb::MetaReply&) -> std::string {
        model_.RemoveXattr(target, key);
        return "";
      });
    }
    return p;
  }
  if (rng_.Chance(0.3)) {
    p.what = "getxattr";
    p.request.mutable_getxattr()->set_ino(target);
    p.request.mutable_getxattr()->set_name(key);
    if (!user_ok || !has) {
      p.check = Expect(ENODATA);
    } else {
      const std::string value = n->xattrs.at(key);
      p.check = Expect(0, [value](const pb::MetaReply& r) -> std::string {
        return r.value() == value ? "" : absl::StrCat("xattr value ", r.value(), " not ", value);
      });
    }
    return p;
  }
  const uint32_t flags = rng_.Chance(0.2) ? kXattrCreate : rng_.Chance(0.2) ? kXattrReplace : 0;
  const std::string value = absl::StrCat("v", rng_.Below(100000));
  p.what = "setxattr";
  pb::SetxattrOp* op = p.request.mutable_setxattr();
  op->set_ino(target);
  op->set_name(key);
  op->set_value(value);
  op->set_flags(flags);
  if (!user_ok) {
    p.check = Expect(EPERM);
  } else if ((flags & kXattrCreate) && has) {
    p.check = Expect(EEXIST);
  } else if ((flags & kXattrReplace) && !has) {
    p.check = Expect(ENODATA);
  } else {
    p.check = Expect(0, [this, target, key, value](const pb::MetaReply&) -> std::string {
      model_.SetXattr(target, key, value);
      return "";
    });
  }
  return p;
}

Plan World::MakeSharedOpen(Client& c, uint64_t target) {
  Plan p;
  p.what = "open-shared";
  pb::OpenOp* op = p.request.mutable_open();
  op->set_ino(target);
  op->set_flags(O_RDONLY);
  // Judged against the model when answered: the other client's requests
  // answered meanwhile (a chmod, its last close of the file after an
  // unlink) are in it by then.
  p.check = [this, &c, target](const absl::Status& s, const pb::MetaReply& r) -> std::string {
    const Node* n = model_.Find(target);
    const int got = ErrnoOf(s);
    // By number, so only the file's own mode decides: its owner's class, or
    // everyone else's (no client shares another's group; no ACLs on files
    // here). A stray still open is opened by number all the same.
    auto may_read = [&c, n](uint32_t mode) {
      return c.uid == 0 || (n->uid == c.uid ? (mode & 0400) : (mode & 04));
    };
    int want = ESTALE;
    if (n != nullptr) want = may_read(n->mode) ? 0 : EACCES;
    // Unlinked, its last handle closed, not yet purged: gone at the MDS.
    if (got == ESTALE && n != nullptr && n->links == 0) want = ESTALE;
    // A chmod of it under way (its answer not in the model yet) may have
    // been applied before this open was checked.
    for (const Client& o : clients_) {
      if (n == nullptr || !o.pending || !o.pending->plan.request.has_setattr()) continue;
      const pb::SetattrOp& sa = o.pending->plan.request.setattr();
      const int then = may_read(sa.mode()) ? 0 : EACCES;
      if (sa.ino() == target && (sa.valid() & pb::SA_MODE) && got == then) want = got;
    }
    if (got != want) {
      return absl::StrCat("errno ", got, " (", s.ToString(), "), the model says ", want);
    }
    if (got == 0) {
      model_.Open(target);
      ++c.handles[target];
      c.inline_files[target] = r.attr().data_inline();
    }
    return "";
  };
  return p;
}

Plan World::MakeOpen(Client& c) {
  // Now and then, to read, a file another client holds open for writing:
  // a shared file (its writer writes through from then on, each change it
  // reports invalidates this one's pages) drives the file caps. Only while
  // that client has no request of its own under way, so that the file's
  // state is the model's; the writer's open keeps the file in the model
  // whatever it does next.
  Client& other = clients_[rng_.Below(clients_.size())];
  if (&other != &c && !other.pending && !other.writers.empty() && rng_.Chance(0.5)) {
    auto it = other.writers.begin();
    std::advance(it, rng_.Below(other.writers.size()));
    return MakeSharedOpen(c, it->first);
  }
  auto [dir, name] = OwnName(c);
  std::optional<uint64_t> ino = model_.Lookup(dir, name);
  Plan p;
  p.what = "open";
  const bool write = rng_.Chance(0.6);
  pb::OpenOp* op = p.request.mutable_open();
  op->set_ino(ino ? *ino : 0x7ffff003);
  op->set_flags(write ? O_RDWR : O_RDONLY);
  if (!ino) {
    p.check = Expect(ESTALE);
    return p;
  }
  const Node* n = model_.Find(*ino);
  if (n->IsDir() && write) {
    p.check = Expect(EISDIR);
  } else if ((n->mode & S_IFMT) == S_IFLNK) {
    p.check = Expect(ELOOP);
  } else {
    const uint64_t target = *ino;
    p.check = Expect(0, [this, &c, target, write](const pb::MetaReply& r) -> std::string {
      model_.Open(target);
      ++c.handles[target];
      if (write) ++c.writers[target];
      c.inline_files[target] = r.attr().data_inline();
      return "";
    });
  }
  return p;
}

Plan World::MakeRelease(Client& c) {
  Plan p;
  p.what = "release";
  std::vector<uint64_t> open;
  for (const auto& [ino, n] : c.handles) {
    if (ino != lock_file_) open.push_back(ino);
  }
  if (open.empty()) {
    // Releasing what is not open: EBADF, nothing changes.
    p.request.mutable_release()->set_ino(0x7ffff004);
    p.check = Expect(EBADF);
    return p;
  }
  const uint64_t ino = rng_.Pick(open);
  const bool write = c.writers.contains(ino);
  p.request.mutable_release()->set_ino(ino);
  p.request.mutable_release()->set_write(write);
  p.check = Expect(0, [this, &c, ino, write](const pb::MetaReply&) -> std::string {
    if (--c.handles[ino] == 0) c.handles.erase(ino);
    if (write && --c.writers[ino] <= 0) c.writers.erase(ino);
    if (!c.handles.contains(ino)) c.writers.erase(ino);
    model_.Close(ino);
    return "";
  });
  return p;
}

Plan World::MakeWrite(Client& c) {
  std::vector<uint64_t> writable;
  for (const auto& [ino, n] : c.writers) {
    const Node* node = model_.Find(ino);
    if (node != nullptr && node->IsReg() && ino != lock_file_) writable.push_back(ino);
  }
  if (writable.empty()) return MakeOpen(c);
  const uint64_t ino = rng_.Pick(writable);
  const Node* n = model_.Find(ino);
  const uint64_t end = n->size + 1 + rng_.Below(rng_.Chance(0.5) ? 2000 : 200000);
  Plan p;
  p.what = "written";
  pb::WrittenOp* op = p.request.mutable_written();
  op->set_ino(ino);
  op->set_end(end);
  const bool inline_now = c.inline_files.contains(ino) && c.inline_files.at(ino);
  if (inline_now) {
    op->set_inline_report(true);
    pb::InlineExtent* e = op->add_inline_writes();
    e->set_offset(n->size);
    e->set_data(std::string(end - n->size, static_cast<char>('a' + rng_.Below(26))));
  }
  p.check = [this, &c, ino, end, inline_now](const absl::Status& s,
                                             const pb::MetaReply& r) -> std::string {
    if (!s.ok()) return absl::StrCat("written: ", s.ToString());
    c.inline_files[ino] = r.attr().data_inline();
    if (inline_now && r.inline_refused()) {
      // Too big to stay inline: the data moves to objects, then the write.
      Plan move;
      move.what = "uninline";
      move.request.mutable_inline_data()->set_ino(ino);
      move.request.mutable_inline_data()->set_uninline(true);
      move.check = [this, &c, ino, end](const absl::Status& s2,
                                        const pb::MetaReply& r2) -> std::string {
        if (!s2.ok()) return absl::StrCat("uninline: ", s2.ToString());
        if (r2.attr().data_inline()) return "still inline after the move";
        c.inline_files[ino] = false;
        Plan write;
        write.what = "written";
        write.request.mutable_written()->set_ino(ino);
        write.request.mutable_written()->set_end(end);
        write.check = Expect(0, [this, ino, end](const pb::MetaReply&) -> std::string {
          model_.Grow(ino, end);
          return "";
        });
        c.follow_ups.push_front(std::move(write));
        return "";
      };
      c.follow_ups.push_front(std::move(move));
      return "";
    }
    model_.Grow(ino, end);
    return "";
  };
  return p;
}

Plan World::MakeLock(Client& c) {
  if (!c.handles.contains(lock_file_)) return MakeLookup(c);  // its session was lost
  Plan p;
  p.what = "lock";
  pb::LockOp* op = p.request.mutable_lock();
  pb::LockInfo* l = op->mutable_lock();
  l->set_ino(lock_file_);
  l->set_kind(pb::LK_FLOCK);
  l->set_start(0);
  l->set_end((uint64_t{1} << 63) - 1);
  l->set_owner(1);
  l->set_pid(100 + c.index);
  const int pick = static_cast<int>(rng_.Below(4));
  if (pick == 0) {
    op->set_action(pb::LockOp::GET);
    l->set_type(pb::LK_WRITE);
    p.check = Expect(0);
    return p;
  }
  const pb::LockType type = pick == 1 ? pb::LK_UNLOCK : pick == 2 ? pb::LK_READ : pb::LK_WRITE;
  op->set_action(pb::LockOp::SET);
  l->set_type(type);
  op->set_wait_ms(rng_.Chance(0.5) ? 0 : 2000);
  p.check = [this, &c, type](const absl::Status& s, const pb::MetaReply& r) -> std::string {
    if (!s.ok()) {
      if (ErrnoOf(s) == EAGAIN && type != pb::LK_UNLOCK) return "";  // someone holds it
      return absl::StrCat("lock: ", s.ToString());
    }
    if (r.lock_retry()) return "";  // waited, not taken
    if (type == pb::LK_UNLOCK) {
      c.lock.reset();
      return "";
    }
    // Granted: nobody else may hold a conflicting flock now.
    for (Client& o : clients_) {
      if (o.index == c.index || !o.lock) continue;
      if (o.needs_reconnect && !rank_->Reconnecting()) {
        // It missed the reconnect window (frozen): the new incarnation never
        // learnt its lock, and it is evicted next.
        o.lock.reset();
        continue;
      }
      if (type == pb::LK_WRITE || *o.lock == pb::LK_WRITE) {
        return absl::StrCat("flock granted while client ", o.index, " holds one");
      }
    }
    c.lock = type;
    return "";
  };
  return p;
}

Plan World::MakeLookup(Client& c) {
  Plan p;
  p.what = "lookup";
  auto [dir, name] = rng_.Chance(0.7) ? OwnName(c) : std::make_pair(rng_.Pick(c.dirs), Fresh(c));
  std::optional<uint64_t> ino = model_.Lookup(dir, name);
  p.request.mutable_lookup()->set_parent(dir);
  p.request.mutable_lookup()->set_name(name);
  if (Denied(c, dir, false)) {
    p.check = Expect(EACCES);
    return p;
  }
  if (!ino) {
    p.check = Expect(ENOENT);
    return p;
  }
  const uint64_t want = *ino;
  p.check = Expect(0, [this, want](const pb::MetaReply& r) -> std::string {
    if (r.attr().ino() != want) return absl::StrCat("found inode ", r.attr().ino(), " not ", want);
    const Node* n = model_.Find(want);
    if (n == nullptr) return "";
    if ((r.attr().mode() & 07777) != (n->mode & 07777) && (n->mode & S_IFMT) != S_IFLNK) {
      return absl::StrCat("mode ", r.attr().mode(), ", the model says ", n->mode);
    }
    if (n->IsReg() && r.attr().size() != n->size) {
      return absl::StrCat("size ", r.attr().size(), ", the model says ", n->size);
    }
    return "";
  });
  return p;
}

Plan World::MakeReaddir(Client& c) {
  Plan p;
  p.what = "readdir";
  const uint64_t dir = rng_.Pick(c.dirs);
  p.request.mutable_readdir()->set_ino(dir);
  p.request.mutable_readdir()->set_max_entries(4096);
  p.request.mutable_readdir()->set_with_attrs(rng_.Chance(0.5));
  if (!model_.May(dir, c.uid, c.gid, 4)) {
    p.check = Expect(EACCES);
    return p;
  }
  p.check = Expect(0, [this, dir](const pb::MetaReply& r) -> std::string {
    std::map<std::string, uint64_t> got;
    for (const pb::DirEntry& e : r.entries()) got[e.name()] = e.ino();
    auto it = model_.entries().find(dir);
    const std::map<std::string, uint64_t> want =
        it == model_.entries().end() ? std::map<std::string, uint64_t>() : it->second;
    if (!r.eof()) {
      // A page that stopped at a fragment not loaded yet: what it lists is right.
      for (const auto& [name, ino] : got) {
        if (!want.contains(name) || want.at(name) != ino) {
          return absl::StrCat("readdir of ", dir, " lists ", name, ", the model lacks it");
        }
      }
      return "";
    }
    if (got != want) {
      return absl::StrCat("readdir of ", dir, " lists ", got.size(), " entries, the model has ",
                          want.size());
    }
    return "";
  });
  return p;
}

// The shared directory, which every client changes: this client's own
// names in it (only it changes them) are exactly what the model has.
Plan World::MakeReaddirShared(Client& c) {
  Plan p;
  p.what = "readdir-shared";
  p.request.mutable_readdir()->set_ino(shared_);
  p.request.mutable_readdir()->set_max_entries(4096);
  p.request.mutable_readdir()->set_with_attrs(rng_.Chance(0.5));
  const std::string mine = absl::StrCat("n", c.index, "_");
  p.check = Expect(0, [this, mine](const pb::MetaReply& r) -> std::string {
    std::map<std::string, uint64_t> got, want;
    for (const pb::DirEntry& e : r.entries()) {
      if (e.name().rfind(mine, 0) == 0) got[e.name()] = e.ino();
    }
    for (const auto& [name, ino] : model_.entries().at(shared_)) {
      if (name.rfind(mine, 0) == 0) want[name] = ino;
    }
    for (const auto& [name, ino] : got) {
      auto it = want.find(name);
      if (it == want.end() || it->second != ino) {
        return absl::StrCat("readdir of the shared directory lists ", name, " (inode ", ino,
                            "), the model ", it == want.end() ? "lacks it" : "has another");
      }
    }
    if (r.eof() && got.size() != want.size()) {
      return absl::StrCat("readdir of the shared directory lists ", got.size(),
                          " of this client's names, the model has ", want.size());
    }
    return "";
  });
  return p;
}

// getattr of another client's inode, which that client may be changing or
// removing meanwhile (or holding open for writing: a recall).
Plan World::MakeStatOther(Client& c) {
  Client& o = clients_[(c.index + 1 + rng_.Below(clients_.size() - 1)) % clients_.size()];
  if (o.names.empty()) return MakeLookup(c);
  auto it = o.names.begin();
  std::advance(it, rng_.Below(o.names.size()));
  std::optional<uint64_t> ino = model_.Lookup(it->first, it->second);
  if (!ino) return MakeLookup(c);
  const uint64_t want = *ino;
  const uint32_t type = model_.Find(want)->mode & S_IFMT;
  Plan p;
  p.what = "stat-other";
  p.request.mutable_getattr()->set_ino(want);
  p.check = [want, type](const absl::Status& s, const pb::MetaReply& r) -> std::string {
    if (ErrnoOf(s) == ESTALE) return "";  // removed by its owner meanwhile
    if (!s.ok()) return absl::StrCat("stat-other: ", s.ToString());
    if (r.attr().ino() != want) return absl::StrCat("stat-other answered inode ", r.attr().ino());
    if ((r.attr().mode() & S_IFMT) != type) return "stat-other: the inode changed type";
    return "";
  };
  return p;
}

Plan World::MakeBadInput(Client& c) {
  Plan p;
  p.no_retry = true;
  switch (rng_.Below(8)) {
    case 7:
      p.what = "stale-session";
      p.session = c.session + 0x100000;
      p.request.mutable_getattr()->set_ino(mds::kRootIno);
      p.check = Expect(ENOTCONN);
      break;
    case 0:
      p.what = "lookup-slash";
      p.request.mutable_lookup()->set_parent(c.home);
      p.request.mutable_lookup()->set_name("a/b");
      p.check = Expect(EINVAL);
      break;
    case 1:
      p.what = "create-nul";
      p.request.mutable_create()->set_parent(c.home);
      p.request.mutable_create()->set_name(std::string("a\0b", 3));
      p.request.mutable_create()->set_mode(0644);
      p.check = Expect(EINVAL);
      break;
    case 2:
      p.what = "mkdir-long";
      p.request.mutable_mkdir()->set_parent(c.home);
      p.request.mutable_mkdir()->set_name(std::string(256, 'x'));
      p.check = Expect(ENAMETOOLONG);
      break;
    case 3:
      p.what = "getattr-unknown";
      p.request.mutable_getattr()->set_ino(0x7fff0000 + rng_.Below(1000));
      p.check = Expect(ESTALE);
      break;
    case 4:
      p.what = "mkdir-in-unknown";
      p.request.mutable_mkdir()->set_parent(0x7fff1000);
      p.request.mutable_mkdir()->set_name("x");
      p.check = Expect(ESTALE);
      break;
    case 5:
      p.what = "no-op";
      p.check = Expect(EINVAL);  // a request without an operation
      break;
    default:
      p.what = "rename-bad-flags";
      p.request.mutable_rename()->set_parent(c.home);
      p.request.mutable_rename()->set_name("a");
      p.request.mutable_rename()->set_new_parent(c.home);
      p.request.mutable_rename()->set_new_name("b");
      p.request.mutable_rename()->set_flags(3);
      p.check = Expect(EINVAL);
      break;
  }
  return p;
}

Plan World::NextPlan(Client& c) {
  if (!c.follow_ups.empty()) {
    Plan p = std::move(c.follow_ups.front());
    c.follow_ups.pop_front();
    return p;
  }
  const int r = static_cast<int>(rng_.Below(100));
  if (r < 10) return MakeMkdir(c);
  if (r < 22) return MakeCreate(c);
  if (r < 25) return MakeSymlink(c);
  if (r < 29) return links_ ? MakeLink(c) : MakeCreate(c);
  if (r < 36) return MakeUnlink(c, false);
  if (r < 40) return MakeUnlink(c, true);
  if (r < 48) return MakeRename(c);
  if (r < 54) return MakeSetattr(c);
  if (r < 60) return MakeXattr(c);
  if (r < 66) return MakeOpen(c);
  if (r < 72) return MakeRelease(c);
  if (r < 80) return MakeWrite(c);
  if (r < 84) return MakeLock(c);
  if (r < 88) return MakeLookup(c);
  if (r < 90) return MakeStatOther(c);
  if (r < 92) return MakeReaddirShared(c);
  if (r < 95) return MakeReaddir(c);
  if (r < 97) {
    Plan p;
    p.what = "sync";
    p.request.mutable_sync();
    p.check = Expect(0);
    return p;
  }
  return MakeBadInput(c);
}

}  // namespace weft::sim
