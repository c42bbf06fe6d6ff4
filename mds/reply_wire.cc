// Reply to and from the wire's MetaReply: the one place that copies a reply
// field by field (tests/unit/reply_wire_test.cc fails when the wire gains a
// field this does not carry).
#include "common/fs/attr_wire.h"
#include "common/locks/lock_proto.h"
#include "common/rpc/rpc.h"
#include "mds/reply.h"

namespace weft::mds {

void ToWire(const Reply& reply, uint64_t tid, pb::MetaReply* out) {
  if (!reply.status.ok()) rpc::ToProto(reply.status, out->mutable_status());
  if (reply.attr.ino != 0) fs::ToWire(reply.attr, out->mutable_attr());
  for (const fs::DirEntry& e : reply.entries) fs::ToWire(e, out->add_entries());
  out->set_eof(reply.eof);
  out->set_value(reply.value);
  for (const std::string& name : reply.names) out->add_names(name);
  if (reply.statfs) fs::ToWire(*reply.statfs, out->mutable_statfs());
  out->set_replayed(reply.replayed);
  out->set_unsafe(reply.unsafe);
  out->set_seq(reply.seq);
  out->set_durable_seq(reply.durable_seq);
  out->set_boot(reply.boot);
  out->set_time_ns(reply.time_ns);
  out->set_created(reply.created);
  for (const DirLeaseGrant& g : reply.leases) {
    pb::DirLease* l = out->add_leases();
    l->set_ino(g.dir.value());
    l->set_seq(g.seq);
    l->set_lease_ms(g.lease_ms);
    l->set_searchable(g.searchable);
  }
  out->set_attr_authority(reply.attr_authority);
  out->set_write_through(reply.write_through);
  out->set_buffer_seq(reply.buffer_seq);
  out->set_append_offset(reply.append_offset);
  out->set_tid(tid);
  out->set_prior_size(reply.prior_size);
  if (reply.replaced.ino != 0) fs::ToWire(reply.replaced, out->mutable_replaced());
  if (reply.inline_data) out->set_inline_data(*reply.inline_data);
  out->set_inline_refused(reply.inline_refused);
  for (const fs::Attr& a : reply.changed) fs::ToWire(a, out->add_changed());
  if (reply.lock_query) {
    if (reply.lock_query->conflict) {
      locks::ToProto(*reply.lock_query->conflict, out->mutable_lock());
    } else {
      out->mutable_lock()->set_type(pb::LK_UNLOCK);
    }
  }
  out->set_lock_retry(reply.lock_retry);
  out->set_osd_epoch_barrier(reply.osd_epoch_barrier);
  for (const AttrCapGrant& g : reply.attr_caps) {
    pb::DirLease* c = out->add_attr_caps();
    c->set_ino(g.ino.value());
    c->set_seq(g.seq);
    c->set_lease_ms(g.lease_ms);
  }
}

absl::StatusOr<Reply> FromWire(const pb::MetaReply& wire) {
  Reply reply;
  reply.status = rpc::FromProto(wire.status());
  if (wire.has_attr()) reply.attr = fs::FromWire(wire.attr());
  reply.entries.reserve(wire.entries_size());
  for (const pb::DirEntry& e : wire.entries()) reply.entries.push_back(fs::FromWire(e));
  reply.eof = wire.eof();
  reply.value = wire.value();
  reply.names.assign(wire.names().begin(), wire.names().end());
  if (wire.has_statfs()) reply.statfs = fs::FromWire(wire.statfs());
  reply.replayed = wire.replayed();
  reply.unsafe = wire.unsafe();
  reply.seq = wire.seq();
  reply.durable_seq = wire.durable_seq();
  reply.boot = wire.boot();
  reply.time_ns = wire.time_ns();
  reply.created = wire.created();
  for (const pb::DirLease& l : wire.leases()) {
    reply.leases.push_back(DirLeaseGrant{InodeId(l.ino()), l.seq(), l.lease_ms(), l.searchable()});
  }
  reply.attr_authority = wire.attr_authority();
  reply.write_through = wire.write_through();
  reply.buffer_seq = wire.buffer_seq();
  reply.append_offset = wire.append_offset();
  reply.prior_size = wire.prior_size();
  if (wire.has_replaced()) reply.replaced = fs::FromWire(wire.replaced());
  if (wire.has_inline_data()) reply.inline_data = wire.inline_data();
  reply.inline_refused = wire.inline_refused();
  for (const pb::Attr& a : wire.changed()) reply.changed.push_back(fs::FromWire(a));
  if (wire.has_lock()) {
    Reply::LockQuery query;
    if (wire.lock().type() != pb::LK_UNLOCK) {
      absl::StatusOr<locks::Lock> conflict = locks::FromProto(wire.lock());
      if (!conflict.ok()) return conflict.status();
      query.conflict = *conflict;
    }
    reply.lock_query = query;
  }
  reply.lock_retry = wire.lock_retry();
  reply.osd_epoch_barrier = wire.osd_epoch_barrier();
  for (const pb::DirLease& c : wire.attr_caps()) {
    reply.attr_caps.push_back(AttrCapGrant{InodeId(c.ino()), c.seq(), c.lease_ms()});
  }
  return reply;
}

}  // namespace weft::mds
