// The object layer as clients see it: the cluster map (from an MDS session,
// kept current by a stream the MDS pushes epochs on — no polling), placement,
// and operations on objects sent to each PG's primary with retries across map
// changes. Every frontend (the FUSE mount, the `weft` CLI, gateways) uses it.
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
#include "common/bytes/byte_chain.h"
#include "common/cluster_map/osd_map.h"
#include "common/ec/erasure_code.h"
#include "common/rpc/rpc.h"
#include "proto/osd.pb.h"

namespace weft::client {

struct ClientOptions {
  std::vector<std::string> mds_addrs;  // any MDS serves maps
  // Client id in request ids; default client.<pid>.<rand>. Must be unique
  // per process incarnation: OSDs answer a completed request id from their
  // log without applying it again.
  std::string name;
  int64_t op_timeout_ms = 120000;      // one operation, all retries included
  int64_t rpc_timeout_ms = 30000;      // one attempt
  // Writes go through while OSDs are marked full (OPF_FULL_TRY): the MDS's.
  bool full_try = false;
};

// Operations on one object, applied in order and atomically. A request holds
// either reads or mutations, not both.
class ObjectOperation {
 public:
  ObjectOperation& Create(bool exclusive);
  ObjectOperation& Write(uint64_t offset, std::string data);
  ObjectOperation& WriteFull(std::string data);
  ObjectOperation& Append(std::string data);
  ObjectOperation& Truncate(uint64_t size);
  ObjectOperation& Remove();
  ObjectOperation& SetXattr(std::string name, std::string value);
  ObjectOperation& RmXattr(std::string name);
  ObjectOperation& OmapSet(std::vector<std::pair<std::string, std::string>> kvs);
  ObjectOperation& OmapRm(std::vector<std::string> keys);
  ObjectOperation& OmapClear();

  ObjectOperation& Read(uint64_t offset, uint64_t length);  // length 0 = to the end
  ObjectOperation& Stat();
  ObjectOperation& GetXattr(std::string name);
  ObjectOperation& GetXattrs();
  ObjectOperation& OmapGet(std::vector<std::string> keys);
  ObjectOperation& OmapList(std::string start_after, std::string prefix, uint32_t max_entries);

  const std::vector<pb::ObjectOp>& ops() const { return ops_; }
  std::vector<pb::ObjectOp> TakeOps() && { return std::move(ops_); }

 private:
  pb::ObjectOp& Add(pb::OpType type);
  std::vector<pb::ObjectOp> ops_;
};

struct OpResult {
  struct Item {
    ByteChain data;  // a read's bytes, where they were received
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    uint64_t version_epoch = 0, version_seq = 0;
    std::vector<std::pair<std::string, std::string>> kvs;
    bool more = false;
  };
  std::vector<Item> items;  // one per operation, in order
  uint64_t version_epoch = 0, version_seq = 0;  // of a mutation
  // Of a mutation: the object's logical size before and after it (0 when
  // absent; both 0 when the OSD had already applied it, on a retry).
  uint64_t size_before = 0, size_after = 0;
  int64_t SizeChange() const {
    return static_cast<int64_t>(size_after) - static_cast<int64_t>(size_before);
  }
};

struct ObjectStat {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t version_epoch = 0, version_seq = 0;
};

class ObjectClient {
 public:
  // Fetches the map from the first MDS that answers and starts following it.
  static absl::StatusOr<std::unique_ptr<ObjectClient>> Connect(ClientOptions options);
  ~ObjectClient();

  std::shared_ptr<const OsdMap> map();
  // Waits up to `timeout` for a map newer than `epoch`; returns the current map.
  std::shared_ptr<const OsdMap> WaitNewer(Epoch epoch, absl::Duration timeout);
  absl::StatusOr<PoolId> LookupPool(const std::string& name);

  // Runs `op` on the object's primary. With `from_osd`, reads that OSD's own
  // copy instead (replica checks, tools). Erasure pools: a request that is one
  // READ with a length goes straight to the shards holding the bytes (no
  // primary, no reassembly; degraded shards are decoded around); if the
  // shards cannot answer consistently, the primary serves it.
  absl::StatusOr<OpResult> Execute(PoolId pool, const std::string& oid, const ObjectOperation& op,
                                   OsdId from_osd = kNoOsd);
  // The same, moving the operation's data into the request. Data of 64 KiB
  // or more then goes to the OSD without another copy (common/rpc/aliased.h).
  absl::StatusOr<OpResult> Execute(PoolId pool, const std::string& oid, ObjectOperation&& op,
                                   OsdId from_osd = kNoOsd);
  // The same for a caller that sends one buffer again and again (weft bench,
  // as rados bench reuses one per slot): the operations' data comes back in
  // *spent once gRPC holds none of it any more, or not at all if it still
  // does when the call ends (then the caller needs a new buffer).
  absl::StatusOr<OpResult> Execute(PoolId pool, const std::string& oid, ObjectOperation&& op,
                                   std::vector<std::string>* spent);

  // Whole-object conveniences. Put is atomic up to kMaxPieceBytes; larger
  // objects are written in pieces (the first replaces the object).
  absl::Status Put(PoolId pool, const std::string& oid, const std::string& data);
  absl::StatusOr<std::string> Get(PoolId pool, const std::string& oid, OsdId from_osd = kNoOsd);
  absl::StatusOr<ObjectStat> Stat(PoolId pool, const std::string& oid);
  absl::Status Remove(PoolId pool, const std::string& oid);
  // Every object name in the pool that begins with `prefix`, sorted per PG:
  // one request per PG (and page), whatever the number of names.
  absl::StatusOr<std::vector<std::string>> List(PoolId pool, const std::string& prefix = "");

  const std::string& name() const { return options_.name; }
  // Erasure pools, for checks and tools: reads [offset, offset + length) using
  // only the shards whose bits are set in `shard_mask` (decoding if they are
  // not the data shards).
  absl::StatusOr<std::string> EcReadUsing(PoolId pool, const std::string& oid, uint64_t offset,
                                          uint64_t length, uint32_t shard_mask);
  // Object data bytes received from each OSD since this client started (what
  // the network moved for reads), by OSD id.
  std::map<int32_t, uint64_t> ReceivedBytes();
  static constexpr uint64_t kMaxPieceBytes = 16ull << 20;
  // Requests carrying at least this much data are sent aliased (no copy);
  // smaller ones through the generated stub (one thread handoff less).
  static constexpr uint64_t kAliasedDataBytes = 64 << 10;

 private:
  explicit ObjectClient(ClientOptions options);
  absl::Status FetchMap();
  absl::StatusOr<OpResult> Run(PoolId pool, const std::string& oid, ObjectOperation&& op,
                               OsdId from_osd, std::vector<std::string>* spent);
  void WatchLoop();
  void Install(const std::string& bytes);
  absl::StatusOr<std::vector<std::string>> ListPg(PoolId pool, uint32_t seed,
                                                  const std::string& prefix);
  // The direct shard read of an erasure pool (object_client_ec.cc).
  absl::StatusOr<OpResult> EcRead(const OsdMap& map, const PoolInfo& pool, const std::string& oid,
                                  const pb::ObjectOp& op, uint32_t shard_mask = ~0u);
  ec::ErasureCode* Code(uint32_t k, uint32_t m);
  void CountReceived(int32_t osd, uint64_t bytes);

  const ClientOptions options_;
  rpc::ChannelCache channels_;
  rpc::ChannelCache stream_channels_;  // the map watch's own connection (as MetaClient's)
  std::atomic<uint64_t> next_tid_{1};

  absl::Mutex mu_;
  std::shared_ptr<const OsdMap> map_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* watch_ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::flat_hash_map<uint64_t, std::unique_ptr<ec::ErasureCode>> codes_ ABSL_GUARDED_BY(mu_);
  std::map<int32_t, uint64_t> received_ ABSL_GUARDED_BY(mu_);
  std::thread watcher_;
};

}  // namespace weft::client
