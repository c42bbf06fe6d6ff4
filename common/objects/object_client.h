// The object layer over the network: the cluster map (from a MapSource, kept
// current as it publishes epochs — no polling — and by the newer maps OSDs
// attach to their replies), placement, and operations on objects sent to
// each PG's primary with retries across map changes. The MDS, the client
// library (the FUSE mount, gateways) and the `weft` CLI all use it.
//
// Thread-safe. Operations block until done, failed for good, or timed out.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/cluster_map/osd_map.h"
#include "common/ec/erasure_code.h"
#include "common/objects/map_source.h"
#include "common/objects/objects.h"
#include "common/rpc/rpc.h"
#include "proto/osd.pb.h"

namespace weft::objects {

struct ClientOptions {
  std::vector<std::string> mds_addrs;  // any MDS serves maps (the default MapSource)
  // Client id in request ids; default client.<pid>.<rand>. Must be unique
  // per process incarnation: OSDs answer a completed request id from their
  // log without applying it again.
  std::string name;
  int64_t op_timeout_ms = 120000;      // one operation, all retries included
  int64_t rpc_timeout_ms = 30000;      // one attempt
  // Writes go through while OSDs are marked full (OPF_FULL_TRY): the MDS's.
  bool full_try = false;
};

class ObjectClient final : public Objects {
 public:
  // Gets the map from `source` (null: an MdsMapSource on options.mds_addrs)
  // and starts following it.
  static absl::StatusOr<std::unique_ptr<ObjectClient>> Connect(
      ClientOptions options, std::unique_ptr<MapSource> source = nullptr);
  ~ObjectClient() override;

  std::shared_ptr<const OsdMap> map();
  // Waits up to `timeout` for a map newer than `epoch`; returns the current map.
  std::shared_ptr<const OsdMap> WaitNewer(Epoch epoch, absl::Duration timeout);
  absl::StatusOr<PoolId> LookupPool(const std::string& name);

  // Runs `op` on the object's primary, moving the operation's data into the
  // request: data of 64 KiB or more then goes to the OSD without another
  // copy (common/rpc/aliased.h). Erasure pools: a request that is one READ
  // with a length goes straight to the shards holding the bytes (no primary,
  // no reassembly; degraded shards are decoded around); if the shards cannot
  // answer consistently, the primary serves it.
  absl::StatusOr<OpResult> Execute(PoolId pool, const std::string& oid,
                                   ObjectOperation&& op) override;
  using Objects::Execute;
  // The same on that OSD's own copy instead of the primary's (replica
  // checks, tools).
  absl::StatusOr<OpResult> ExecuteOn(PoolId pool, const std::string& oid,
                                     const ObjectOperation& op, OsdId from_osd);
  // The same as Execute for a caller that sends one buffer again and again
  // (weft bench, as rados bench reuses one per slot): the operations' data
  // comes back in *spent once gRPC holds none of it any more, or not at all
  // if it still does when the call ends (then the caller needs a new buffer).
  absl::StatusOr<OpResult> ExecuteReusing(PoolId pool, const std::string& oid,
                                          ObjectOperation&& op, std::vector<std::string>* spent);
  // Every object name in the pool that begins with `prefix`, sorted per PG:
  // one request per PG (and page), whatever the number of names.
  absl::StatusOr<std::vector<std::string>> List(PoolId pool,
                                                const std::string& prefix) override;
  absl::StatusOr<std::vector<std::string>> List(PoolId pool) { return List(pool, ""); }
  // Object `oid` whole, read from OSD `from_osd`'s own copy.
  absl::StatusOr<std::string> GetFrom(PoolId pool, const std::string& oid, OsdId from_osd);

  // The identity the OSDs see on every request (what a blocklist names).
  std::string name() const ABSL_LOCKS_EXCLUDED(name_mu_);
  // A new identity from now on: a mount that recovers after its eviction
  // (the old one is blocklisted).
  void Rename(std::string name) ABSL_LOCKS_EXCLUDED(name_mu_);
  // A fresh identity, client.<pid>.<random>: what Connect gives a client
  // that names none.
  static std::string NewName();
  // Erasure pools, for checks and tools: reads [offset, offset + length) using
  // only the shards whose bits are set in `shard_mask` (decoding if they are
  // not the data shards).
  absl::StatusOr<std::string> EcReadUsing(PoolId pool, const std::string& oid, uint64_t offset,
                                          uint64_t length, uint32_t shard_mask);
  // Object data bytes received from each OSD since this client started (what
  // the network moved for reads), by OSD id.
  std::map<int32_t, uint64_t> ReceivedBytes();
  // Requests carrying at least this much data are sent aliased (no copy);
  // smaller ones through the generated stub (one thread handoff less).
  static constexpr uint64_t kAliasedDataBytes = 64 << 10;

 private:
  ObjectClient(ClientOptions options, std::unique_ptr<MapSource> source);
  absl::StatusOr<OpResult> Run(PoolId pool, const std::string& oid, ObjectOperation&& op,
                               OsdId from_osd, std::vector<std::string>* spent);
  void Install(std::shared_ptr<const OsdMap> map);
  void InstallBytes(const std::string& bytes);  // a map an OSD attached
  absl::StatusOr<std::vector<std::string>> ListPg(PoolId pool, uint32_t seed,
                                                  const std::string& prefix);
  // The direct shard read of an erasure pool (object_client_ec.cc).
  absl::StatusOr<OpResult> EcRead(const OsdMap& map, const PoolInfo& pool, const std::string& oid,
                                  const pb::ObjectOp& op, uint32_t shard_mask = ~0u);
  ec::ErasureCode* Code(uint32_t k, uint32_t m);
  void CountReceived(int32_t osd, uint64_t bytes);

  const ClientOptions options_;
  const std::unique_ptr<MapSource> source_;
  mutable absl::Mutex name_mu_;
  std::string name_ ABSL_GUARDED_BY(name_mu_);
  rpc::ChannelCache channels_;
  std::atomic<uint64_t> next_tid_{1};

  absl::Mutex mu_;
  std::shared_ptr<const OsdMap> map_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<uint64_t, std::unique_ptr<ec::ErasureCode>> codes_ ABSL_GUARDED_BY(mu_);
  std::map<int32_t, uint64_t> received_ ABSL_GUARDED_BY(mu_);
  std::thread watcher_;
};

}  // namespace weft::objects
