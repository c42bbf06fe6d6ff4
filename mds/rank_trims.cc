// Truncates: the MDS cuts a file's objects past its new size itself, before
// it answers, while every other writer of the file holds its writes.
//
// A client that trimmed after the MDS's answer (as Weft did first) left a
// window in which another client's fresh write landed in an object the
// late trim then cut, and a client dying in between left old bytes past the
// size, which a later extension showed instead of zeros. Now the size change
// and a TrimRec go into one journal event; once durable the request's
// thread cuts the objects, records trim_done, and only when that is durable
// does anyone see or write the file again (TrimBlockedLocked; held writers
// get LeaseEvent.release). A restart finds unfinished trims in the journal
// or the "trims" table and cuts them again before serving.
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "mds/rank.h"

namespace weft::mds {
namespace {

// How long a request waits for a file's trim before the client is told to
// retry (Unavailable): the OSDs may be down.
constexpr int64_t kTrimWaitMs = 10'000;

}  // namespace

absl::Status MdsRank::CutObjects(const pb::TrimRec& trim) {
  ASSIGN_OR_RETURN(client::FileData data, client::FileDataOf(trim.ino(), trim.layout()));
  return trim_io_.Trim(data, trim.size(), trim.keep());
}

absl::Status MdsRank::RunTrim(uint64_t ino, bool retry) {
  for (;;) {
    pb::TrimRec trim;
    {
      absl::MutexLock lock(&mu_);
      auto idle = [this, ino]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !trims_running_.contains(ino);
      };
      mu_.Await(absl::Condition(&idle));
      if (stopping_) return absl::UnavailableError("the MDS is stopping");
      auto it = cache_.trims().find(ino);
      if (it == cache_.trims().end()) return absl::OkStatus();  // done by another thread
      trim = it->second;
      trims_running_.insert(ino);
    }
    absl::Status cut = CutObjects(trim);
    uint64_t seq = 0;
    {
      absl::MutexLock lock(&mu_);
      if (cut.ok()) {
        pb::JournalEvent event;
        event.set_op("trimmed");
        event.add_trim_done(ino);
        seq = CommitLocked(&event);
      } else {
        trims_running_.erase(ino);
        LOG(WARNING) << "event=trim_failed ino=" << ino << " keep=" << trim.keep()
                     << " size=" << trim.size() << " status=\"" << cut << "\"";
        if (!retry) return cut;
        if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Seconds(1))) return cut;
        continue;
      }
    }
    // Until trim_done is durable a restart would cut again, over what
    // writers wrote meanwhile: they wait for it.
    absl::Status durable = journal_.WaitDurable(seq);
    absl::MutexLock lock(&mu_);
    trims_running_.erase(ino);
    MaybeReleaseHoldsLocked(ino);
    VLOG(1) << "event=trimmed ino=" << ino << " keep=" << trim.keep() << " size=" << trim.size();
    return durable;
  }
}

void MdsRank::RunPendingTrims() {
  std::vector<uint64_t> pending;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [ino, trim] : cache_.trims()) {
      if (!trims_running_.contains(ino)) pending.push_back(ino);
    }
  }
  for (uint64_t ino : pending) (void)RunTrim(ino, /*retry=*/false);
}

void MdsRank::EndHoldsLocked(const absl::flat_hash_set<RecallKey>& held) {
  for (const auto& [session, ino] : held) {
    auto it = hold_requests_.find(ino);
    if (it != hold_requests_.end() && --it->second <= 0) hold_requests_.erase(it);
  }
  for (const auto& [session, ino] : held) MaybeReleaseHoldsLocked(ino);
}

void MdsRank::MaybeReleaseHoldsLocked(uint64_t ino) {
  if (hold_requests_.contains(ino) || TrimBlockedLocked(ino)) return;
  auto held = trim_holds_.find(ino);
  if (held == trim_holds_.end()) return;
  pb::LeaseEvent release;
  release.set_ino(ino);
  release.set_release(true);
  for (uint64_t session : held->second) SendLeaseEventLocked(session, release);
  trim_holds_.erase(held);
}

absl::StatusOr<bool> MdsRank::AwaitTrimsLocked(const pb::MetaReply& reply,
                                                const std::vector<uint64_t>& touched) {
  if (cache_.trims().empty() && trims_running_.empty()) return false;  // nearly always
  return AwaitTrimsLocked(ShownInos(reply, touched));
}

absl::StatusOr<bool> MdsRank::AwaitTrimsLocked(const std::vector<uint64_t>& inos) {
  if (cache_.trims().empty() && trims_running_.empty()) return false;
  auto blocked = [this, &inos]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (uint64_t ino : inos) {
      if (TrimBlockedLocked(ino)) return true;
    }
    return false;
  };
  if (!blocked()) return false;
  auto clear = [this, &blocked]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !blocked();
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&clear), absl::Milliseconds(kTrimWaitMs))) {
    return absl::UnavailableError("a truncate of the file is still cutting its objects; retry");
  }
  if (stopping_) return absl::UnavailableError("the MDS is stopping");
  return true;
}

}  // namespace weft::mds
