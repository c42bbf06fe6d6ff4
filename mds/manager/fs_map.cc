#include "mds/manager/fs_map.h"

#include "absl/strings/str_cat.h"
#include "common/config/config.h"
#include "common/log/log.h"
#include "common/status/status.h"

namespace weft::mds {

FsMapStore::FsMapStore(MapManager* manager, etcd::Client* etcd, const std::string& fsid)
    : manager_(manager),
      etcd_(etcd),
      key_(ClusterPrefix(fsid) + "fsmap"),
      leader_key_(ClusterPrefix(fsid) + "leader") {}

FsMapStore::~FsMapStore() { Stop(); }

absl::Status FsMapStore::Start() {
  ASSIGN_OR_RETURN(etcd::RangeResult current, etcd_->Get(key_));
  if (!current.kvs.empty()) OnBytes(current.kvs[0].value, current.kvs[0].mod_revision);
  watch_ = etcd_->WatchRange(
      key_, "", current.revision + 1,
      [this](const std::vector<etcd::WatchEvent>& events) {
        for (const auto& ev : events) {
          if (ev.type == etcd::WatchEvent::kPut) OnBytes(ev.kv.value, ev.kv.mod_revision);
        }
      },
      [](const absl::Status& status) {
        LOG(WARNING) << "event=fsmap_watch_error status=\"" << status << "\"";
      });
  return absl::OkStatus();
}

void FsMapStore::Stop() { watch_.reset(); }

void FsMapStore::OnBytes(const std::string& bytes, int64_t revision) {
  pb::FsMap next;
  if (!next.ParseFromString(bytes)) {
    LOG(WARNING) << "event=bad_fsmap";
    return;
  }
  // A map from before several ranks: its rank 0 is the first of `ranks`.
  for (pb::FsInfo& fs : *next.mutable_filesystems()) {
    if (fs.ranks_size() == 0) *fs.add_ranks() = fs.rank0();
    fs.clear_rank0();
  }
  absl::MutexLock lock(&mu_);
  if (revision <= revision_) return;
  map_ = std::move(next);
  revision_ = revision;
}

pb::FsMap FsMapStore::map() {
  absl::MutexLock lock(&mu_);
  return map_;
}

pb::FsMap FsMapStore::WaitNewer(uint64_t have, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto newer = [this, have]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return map_.epoch() > have; };
  mu_.AwaitWithTimeout(absl::Condition(&newer), timeout);
  return map_;
}

absl::Status FsMapStore::Mutate(const std::function<absl::Status(pb::FsMap*)>& change) {
  absl::MutexLock serial(&mutate_mu_);
  for (int attempt = 0; attempt < 8; ++attempt) {
    const int64_t lease = manager_->LeaderLease();
    if (lease == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("not the map manager; leader=", manager_->LeaderAddr()));
    }
    pb::FsMap next;
    int64_t revision = 0;
    {
      absl::MutexLock lock(&mu_);
      next = map_;
      revision = revision_;
    }
    RETURN_IF_ERROR(change(&next));
    next.set_epoch(next.epoch() + 1);
    const std::string bytes = next.SerializeAsString();
    ASSIGN_OR_RETURN(
        etcd::TxnResult txn,
        etcd_->Txn({etcd::Compare::ModRevision(key_, etcd::Compare::kEqual, revision),
                    etcd::Compare::Lease(leader_key_, etcd::Compare::kEqual, lease)},
                   {etcd::Op::Put(key_, bytes)}, {etcd::Op::Get(key_)}));
    if (txn.succeeded) {
      OnBytes(bytes, txn.revision);
      LOG(INFO) << "event=fsmap_published epoch=" << next.epoch();
      return absl::OkStatus();
    }
    if (!txn.ranges.empty() && !txn.ranges[0].kvs.empty()) {
      OnBytes(txn.ranges[0].kvs[0].value, txn.ranges[0].kvs[0].mod_revision);
    }
  }
  return absl::AbortedError("the fsmap kept changing under us; try again");
}

absl::Status FsMapStore::ValidateNew(const pb::FsMap& fsmap, const OsdMap& osdmap,
                                     const std::string& name, const std::string& metadata_pool,
                                     const std::string& data_pool) {
  if (!IsPlainName(name, 64)) {
    return absl::InvalidArgumentError(
        "filesystem names are 1 to 64 characters of letters, digits, '_', '-' and '.'");
  }
  for (const pb::FsInfo& fs : fsmap.filesystems()) {
    if (fs.name() == name) return absl::AlreadyExistsError(absl::StrCat("filesystem ", name, " exists"));
  }
  const PoolInfo* meta = osdmap.FindPoolByName(metadata_pool);
  if (meta == nullptr) return absl::NotFoundError(absl::StrCat("no pool ", metadata_pool));
  if (meta->ec_k != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("metadata pool ", metadata_pool, " is erasure coded; it must be replicated"));
  }
  const PoolInfo* data = osdmap.FindPoolByName(data_pool);
  if (data == nullptr) return absl::NotFoundError(absl::StrCat("no pool ", data_pool));
  for (const pb::FsInfo& fs : fsmap.filesystems()) {
    if (fs.metadata_pool() == meta->id.value() || fs.metadata_pool() == data->id.value()) {
      return absl::FailedPreconditionError(
          absl::StrCat("pool is the metadata pool of filesystem ", fs.name()));
    }
  }
  return absl::OkStatus();
}

}  // namespace weft::mds
