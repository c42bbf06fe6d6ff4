#include "mds/manager/mds_registry.h"

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/config/config.h"
#include "common/log/log.h"
#include "common/status/status.h"

namespace weft::mds {

MdsRegistry::MdsRegistry(etcd::Client* etcd, const std::string& fsid, pb::MdsAlive self,
                         int64_t ttl_s)
    : etcd_(etcd),
      prefix_(absl::StrCat(ClusterPrefix(fsid), "alive/mds.")),
      self_(std::move(self)),
      ttl_s_(ttl_s) {}

MdsRegistry::~MdsRegistry() {
  Stop();
  keeper_.reset();
}

std::string MdsRegistry::KeyOf(const std::string& fsid, const std::string& name) {
  return absl::StrCat(ClusterPrefix(fsid), "alive/mds.", name);
}

absl::Status MdsRegistry::Register(std::function<void()> on_lost) {
  const std::string key = prefix_ + self_.name();
  const std::string value = self_.SerializeAsString();
  // An earlier life's record lasts at most the TTL it was last renewed
  // with (ours, unless the config changed), counted again from etcd's own
  // restart if etcd restarted since (a new etcd leader renews every lease
  // once): wait a little past twice that.
  const absl::Time deadline = absl::Now() + absl::Seconds(2 * ttl_s_) + absl::Seconds(2);
  bool told = false;
  for (;;) {
    ASSIGN_OR_RETURN(int64_t lease, etcd_->LeaseGrant(ttl_s_));
    auto txn = etcd_->Txn({etcd::Compare::CreateRevision(key, etcd::Compare::kEqual, 0)},
                          {etcd::Op::Put(key, value, lease)}, {etcd::Op::Get(key)});
    if (txn.ok() && txn->succeeded) {
      lease_ = lease;
      break;
    }
    (void)etcd_->LeaseRevoke(lease);
    if (!txn.ok()) return txn.status();
    pb::MdsAlive other;
    if (!txn->ranges.empty() && !txn->ranges[0].kvs.empty()) {
      other.ParseFromString(txn->ranges[0].kvs[0].value);
    }
    if (absl::Now() >= deadline) {
      return absl::AlreadyExistsError(absl::StrCat(
          "an MDS named ", self_.name(), " is already running at ", other.addr(),
          " (its liveness record in etcd is still renewed); give this one another --name"));
    }
    if (!told) {
      LOG(INFO) << "event=mds_name_taken name=" << self_.name() << " addr=" << other.addr()
                << " action=wait_for_expiry ttl_s=" << ttl_s_;
      told = true;
    }
    absl::SleepFor(absl::Milliseconds(250));
  }
  keeper_ = etcd_->KeepAlive(lease_, ttl_s_, [this, on_lost = std::move(on_lost)] {
    if (stopped_.load()) return;  // Stop revoked it
    LOG(ERROR) << "event=mds_liveness_lost name=" << self_.name();
    on_lost();
  });
  RETURN_IF_ERROR(Reload());
  LOG(INFO) << "event=mds_registered name=" << self_.name() << " addr=" << self_.addr()
            << " ttl_s=" << ttl_s_;
  return absl::OkStatus();
}

absl::Status MdsRegistry::Reload() {
  ASSIGN_OR_RETURN(etcd::RangeResult got, etcd_->GetPrefix(prefix_));
  {
    absl::MutexLock lock(&mu_);
    alive_.clear();
    for (const etcd::KeyValue& kv : got.kvs) {
      pb::MdsAlive record;
      if (record.ParseFromString(kv.value)) alive_[kv.key] = std::move(record);
    }
    ++generation_;
  }
  watch_ = etcd_->WatchRange(
      prefix_, etcd::PrefixEnd(prefix_), got.revision + 1,
      [this](const std::vector<etcd::WatchEvent>& events) { OnEvents(events); },
      [this](const absl::Status& status) {
        // Compacted past our revision: read the records again.
        LOG(WARNING) << "event=mds_alive_watch_error status=\"" << status << "\"";
        if (!stopped_.load()) (void)Reload();
      });
  return absl::OkStatus();
}

void MdsRegistry::OnEvents(const std::vector<etcd::WatchEvent>& events) {
  absl::MutexLock lock(&mu_);
  for (const etcd::WatchEvent& ev : events) {
    if (ev.type == etcd::WatchEvent::kDelete) {
      auto it = alive_.find(ev.kv.key);
      if (it != alive_.end()) {
        LOG(INFO) << "event=mds_gone name=" << it->second.name() << " addr=" << it->second.addr();
        alive_.erase(it);
      }
      continue;
    }
    pb::MdsAlive record;
    if (!record.ParseFromString(ev.kv.value)) {
      LOG(WARNING) << "event=bad_mds_alive key=\"" << absl::CHexEscape(ev.kv.key) << "\"";
      continue;
    }
    LOG(INFO) << "event=mds_alive name=" << record.name() << " addr=" << record.addr();
    alive_[ev.kv.key] = std::move(record);
  }
  ++generation_;
}

void MdsRegistry::Stop() {
  if (stopped_.exchange(true)) return;
  watch_.reset();
  if (lease_ != 0) (void)etcd_->LeaseRevoke(lease_);
}

bool MdsRegistry::Trusted() const {
  return !stopped_.load() && keeper_ != nullptr && keeper_->alive() &&
         absl::Now() < keeper_->expiry();
}

std::vector<pb::MdsAlive> MdsRegistry::daemons() {
  absl::MutexLock lock(&mu_);
  std::vector<pb::MdsAlive> out;
  for (const auto& [key, record] : alive_) out.push_back(record);
  return out;
}

std::optional<pb::MdsAlive> MdsRegistry::Find(const std::string& name) {
  absl::MutexLock lock(&mu_);
  auto it = alive_.find(prefix_ + name);
  if (it == alive_.end()) return std::nullopt;
  return it->second;
}

uint64_t MdsRegistry::generation() {
  absl::MutexLock lock(&mu_);
  return generation_;
}

uint64_t MdsRegistry::WaitChange(uint64_t seen, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return generation_ > seen; };
  mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  return generation_;
}

}  // namespace weft::mds
