// A placement group's log: the recent mutations in version order, with the
// PG's info (last_update, log_tail) and its missing set, all persisted as
// collection metadata in the object store in the same transaction as the
// object change they describe.
//
// Versions are (map epoch, counter). Only one primary exists per epoch and a
// primary assigns strictly increasing versions, so a version names one
// mutation cluster-wide. The log holds the entries in (log_tail, last_update].
//
// Metadata keys (collection meta, an on-disk format):
//   "info"                         pb::PgInfo
//   "log/<epoch:016x><seq:016x>"   pb::LogEntry
//   "missing/<oid>"                "" — objects this copy lacks or has stale
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "osd/store/object_store.h"

namespace weft::osd {

struct LogEntry {
  enum Op : uint32_t { kModify = 1, kDelete = 2 };
  Version version;
  std::string oid;
  Op op = kModify;
  std::string client;  // request id: client name and its transaction id
  uint64_t tid = 0;
};

struct PgInfo {
  Version last_update;
  Version log_tail;
  uint64_t last_epoch_started = 0;
};

class PgLog {
 public:
  // Reads the log, info and missing set of `coll` from the store.
  static absl::StatusOr<PgLog> Load(ObjectStore* store, const std::string& coll,
                                    size_t max_entries);

  const PgInfo& info() const { return info_; }
  const std::deque<LogEntry>& entries() const { return entries_; }
  const std::set<std::string>& missing() const { return missing_; }

  // The version a new mutation in `epoch` gets.
  Version NextVersion(uint64_t epoch) const;

  // Adds `entry` (newer than last_update) to the log and to `txn`, trimming the
  // oldest entries beyond the limit. Call only once `txn` is sure to be applied
  // or the PG will be re-peered (the in-memory log is then reloaded).
  void Append(const LogEntry& entry, Transaction* txn);

  // The version of an earlier mutation with this request id, if still logged.
  std::optional<Version> FindRequest(const std::string& client, uint64_t tid) const;

  // Replaces the log with the authoritative one chosen by peering.
  void Adopt(const PgInfo& info, std::vector<LogEntry> entries, Transaction* txn);

  // Erasure pools: drops the newest entry (a write being rolled back); the
  // previous entry (or the tail) becomes last_update.
  void PopNewest(Transaction* txn);

  void SetLastEpochStarted(uint64_t epoch, Transaction* txn);
  void AddMissing(const std::string& oid, Transaction* txn);
  void RemoveMissing(const std::string& oid, Transaction* txn);
  bool IsMissing(const std::string& oid) const { return missing_.count(oid) > 0; }

 private:
  void PutInfo(Transaction* txn) const;
  void Index(const LogEntry& entry);

  size_t max_entries_ = 0;
  PgInfo info_;
  std::deque<LogEntry> entries_;
  std::set<std::string> missing_;
  // (client, tid) -> version for the logged entries: retried requests are
  // answered from here instead of being applied twice.
  absl::flat_hash_map<std::pair<std::string, uint64_t>, Version> requests_;
};

std::string LogKey(const Version& version);

}  // namespace weft::osd
