#include "osd/pg/pg_log.h"

#include "absl/strings/str_format.h"
#include "common/status/status.h"
#include "osd/pg/pg_codec.h"

namespace weft::osd {
namespace {

constexpr char kInfoKey[] = "info";
constexpr char kLogPrefix[] = "log/";
constexpr char kMissingPrefix[] = "missing/";

}  // namespace

std::string LogKey(const Version& version) {
  return absl::StrFormat("%s%016x%016x", kLogPrefix, version.epoch, version.seq);
}

absl::StatusOr<PgLog> PgLog::Load(ObjectStore* store, const std::string& coll,
                                  size_t max_entries) {
  PgLog log;
  log.max_entries_ = max_entries;
  auto info = store->GetMeta(coll, kInfoKey);
  if (info.ok()) {
    RETURN_IF_ERROR(DecodePgInfo(*info, &log.info_));
  } else if (!absl::IsNotFound(info.status())) {
    return info.status();
  }
  ASSIGN_OR_RETURN(auto entries, store->ListMeta(coll, kLogPrefix));
  for (const auto& [key, value] : entries) {
    LogEntry entry;
    RETURN_IF_ERROR(Annotate(DecodeLogEntry(value, &entry), key));
    log.Index(entry);
    log.entries_.push_back(std::move(entry));
  }
  ASSIGN_OR_RETURN(auto missing, store->ListMeta(coll, kMissingPrefix));
  for (const auto& [key, value] : missing) {
    log.missing_.insert(key.substr(sizeof(kMissingPrefix) - 1));
  }
  return log;
}

Version PgLog::NextVersion(uint64_t epoch) const {
  Version v;
  v.epoch = epoch;
  v.seq = info_.last_update.epoch == epoch ? info_.last_update.seq + 1 : 1;
  if (info_.last_update.epoch > epoch) {
    // Never go backwards, even if asked with an older epoch.
    v.epoch = info_.last_update.epoch;
    v.seq = info_.last_update.seq + 1;
  }
  return v;
}

void PgLog::Append(const LogEntry& entry, Transaction* txn) {
  txn->PutMeta(LogKey(entry.version), EncodeLogEntry(entry));
  entries_.push_back(entry);
  Index(entry);
  info_.last_update = entry.version;
  while (entries_.size() > max_entries_) {
    const LogEntry& oldest = entries_.front();
    txn->DeleteMeta(LogKey(oldest.version));
    info_.log_tail = oldest.version;
    if (!oldest.client.empty()) requests_.erase({oldest.client, oldest.tid});
    entries_.pop_front();
  }
  PutInfo(txn);
}

std::optional<Version> PgLog::FindRequest(const std::string& client, uint64_t tid) const {
  if (client.empty()) return std::nullopt;
  auto it = requests_.find({client, tid});
  if (it == requests_.end()) return std::nullopt;
  return it->second;
}

void PgLog::Adopt(const PgInfo& info, std::vector<LogEntry> entries, Transaction* txn) {
  for (const LogEntry& old : entries_) txn->DeleteMeta(LogKey(old.version));
  entries_.clear();
  requests_.clear();
  for (LogEntry& entry : entries) {
    txn->PutMeta(LogKey(entry.version), EncodeLogEntry(entry));
    Index(entry);
    entries_.push_back(std::move(entry));
  }
  uint64_t les = info_.last_epoch_started;
  info_ = info;
  info_.last_epoch_started = std::max(les, info.last_epoch_started);
  PutInfo(txn);
}

void PgLog::PopNewest(Transaction* txn) {
  if (entries_.empty()) return;
  const LogEntry& newest = entries_.back();
  txn->DeleteMeta(LogKey(newest.version));
  if (!newest.client.empty()) requests_.erase({newest.client, newest.tid});
  entries_.pop_back();
  info_.last_update = entries_.empty() ? info_.log_tail : entries_.back().version;
  PutInfo(txn);
}

void PgLog::SetLastEpochStarted(uint64_t epoch, Transaction* txn) {
  info_.last_epoch_started = epoch;
  PutInfo(txn);
}

void PgLog::AddMissing(const std::string& oid, Transaction* txn) {
  if (missing_.insert(oid).second) txn->PutMeta(kMissingPrefix + oid, "");
}

void PgLog::RemoveMissing(const std::string& oid, Transaction* txn) {
  if (missing_.erase(oid) > 0) txn->DeleteMeta(kMissingPrefix + oid);
}

void PgLog::PutInfo(Transaction* txn) const { txn->PutMeta(kInfoKey, EncodePgInfo(info_)); }

void PgLog::Index(const LogEntry& entry) {
  if (!entry.client.empty()) requests_[{entry.client, entry.tid}] = entry.version;
}

}  // namespace weft::osd
