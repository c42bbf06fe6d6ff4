#include "osd/pg/pg_codec.h"

namespace weft::osd {

void ToProto(const Version& v, pb::Version* out) {
  out->set_epoch(v.epoch);
  out->set_seq(v.seq);
}

Version FromProto(const pb::Version& v) {
  Version out;
  out.epoch = v.epoch();
  out.seq = v.seq();
  return out;
}

void ToProto(const LogEntry& e, pb::LogEntry* out) {
  ToProto(e.version, out->mutable_version());
  out->set_oid(e.oid);
  out->set_op(e.op);
  if (!e.client.empty()) {
    out->mutable_reqid()->set_client(e.client);
    out->mutable_reqid()->set_tid(e.tid);
  }
}

LogEntry FromProto(const pb::LogEntry& e) {
  LogEntry out;
  out.version = FromProto(e.version());
  out.oid = e.oid();
  out.op = e.op() == LogEntry::kDelete ? LogEntry::kDelete : LogEntry::kModify;
  out.client = e.reqid().client();
  out.tid = e.reqid().tid();
  return out;
}

void ToProto(const PgInfo& info, pb::PgInfo* out) {
  ToProto(info.last_update, out->mutable_last_update());
  ToProto(info.log_tail, out->mutable_log_tail());
  out->set_last_epoch_started(info.last_epoch_started);
}

PgInfo FromProto(const pb::PgInfo& info) {
  PgInfo out;
  out.last_update = FromProto(info.last_update());
  out.log_tail = FromProto(info.log_tail());
  out.last_epoch_started = info.last_epoch_started();
  return out;
}

std::string EncodeLogEntry(const LogEntry& entry) {
  pb::LogEntry msg;
  ToProto(entry, &msg);
  return msg.SerializeAsString();
}

absl::Status DecodeLogEntry(const std::string& bytes, LogEntry* entry) {
  pb::LogEntry msg;
  if (!msg.ParseFromString(bytes)) return absl::DataLossError("corrupt PG log entry");
  *entry = FromProto(msg);
  return absl::OkStatus();
}

std::string EncodePgInfo(const PgInfo& info) {
  pb::PgInfo msg;
  ToProto(info, &msg);
  return msg.SerializeAsString();
}

absl::Status DecodePgInfo(const std::string& bytes, PgInfo* info) {
  pb::PgInfo msg;
  if (!msg.ParseFromString(bytes)) return absl::DataLossError("corrupt PG info");
  *info = FromProto(msg);
  return absl::OkStatus();
}

}  // namespace weft::osd
