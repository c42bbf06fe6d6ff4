// Conversions between the PG layer's types and their wire/disk protobufs.
// Kept here so that proto types stay out of the PG logic.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "osd/pg/pg_log.h"
#include "proto/osd.pb.h"

namespace weft::osd {

void ToProto(const Version& v, pb::Version* out);
Version FromProto(const pb::Version& v);
void ToProto(const LogEntry& e, pb::LogEntry* out);
LogEntry FromProto(const pb::LogEntry& e);
void ToProto(const PgInfo& info, pb::PgInfo* out);
PgInfo FromProto(const pb::PgInfo& info);

std::string EncodeLogEntry(const LogEntry& entry);
absl::Status DecodeLogEntry(const std::string& bytes, LogEntry* entry);
std::string EncodePgInfo(const PgInfo& info);
absl::Status DecodePgInfo(const std::string& bytes, PgInfo* info);

}  // namespace weft::osd
