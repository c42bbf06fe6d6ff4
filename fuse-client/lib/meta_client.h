// A session with the MDS serving a filesystem's rank 0, and namespace
// requests over it. Every frontend (the FUSE mount, tests, tools) uses it.
//
// Requests carry (session, tid). Call() retries the same tid when a reply is
// lost, the MDS restarts or rank 0 moves, so a retried create or rename is
// answered from the MDS's completed-request table rather than applied twice.
// A background thread renews the session well within its timeout.
//
// Unsafe replies (MetaClientOptions::unsafe_ok): the MDS may answer a change
// once it is applied in its memory, before its journal entry is durable. The
// client keeps each such request until a reply shows the journal durable past
// it; Sync() waits for that (fsync). When the MDS restarts (a new boot id in
// any reply), the client reconnects: it sends its open files and its unsafe
// requests, which the new incarnation applies in their original order before
// it serves anything else, so nothing a reply told the client is lost unless
// the client dies too.
//
// Thread-safe. Errors from the MDS come back as absl::Status carrying the
// errno a POSIX caller needs (common/status).
#pragma once

#include <atomic>
#include <memory>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/rpc/rpc.h"
#include "fuse-client/lib/dir_leases.h"
#include "proto/cluster.grpc.pb.h"
#include "proto/mds_client.pb.h"

namespace weft::client {

struct MetaClientOptions {
  std::vector<std::string> mds_addrs;
  std::string fs;
  std::string client_name;          // default client.<host>.<pid>
  // The name the client's object client gives the OSDs: bound to the
  // session, it is what an eviction blocklists.
  std::string osd_client;
  int64_t rpc_timeout_ms = 30000;   // one attempt
  int64_t op_timeout_ms = 120000;   // all retries of one request
  bool unsafe_ok = true;            // take early replies (see above)
};

class MetaClient {
 public:
  static absl::StatusOr<std::unique_ptr<MetaClient>> Connect(MetaClientOptions options);
  ~MetaClient();  // closes the session

  uint64_t session() const { return session_; }
  uint64_t root() const { return root_; }
  // How many bytes a file may keep inline in the MDS (SessionReply); 0: none.
  uint64_t inline_max_bytes() const { return inline_max_bytes_.load(); }

  // Sends `request` with this session and the next tid.
  absl::StatusOr<pb::MetaReply> Call(pb::MetaRequest request);
  // Same with a given tid (a retry after a lost reply).
  absl::StatusOr<pb::MetaReply> CallWithTid(pb::MetaRequest request, uint64_t tid);
  uint64_t NextTid() { return next_tid_.fetch_add(1); }
  // The tid the next request gets: a request numbered at or above it
  // leaves after this call returns.
  uint64_t TidsIssued() const { return next_tid_.load(); }

  // Returns once every change this session was answered so far is durable.
  absl::Status Sync();
  // What Reconnect reports as this session's open files; set once, early.
  void SetOpenFiles(std::function<std::vector<pb::OpenRef>()> open_files);
  // Advisory locks (file_locks.h): `held` lists what Reconnect gives back
  // to a restarted MDS; `lost` gets what the MDS did not take back, and
  // every held lock when the MDS lost the session. Set once, early.
  using LocksHeld = std::function<std::vector<pb::LockInfo>()>;
  using LocksLost = std::function<void(const std::vector<pb::LockInfo>&)>;
  void SetLockHooks(LocksHeld held, LocksLost lost);
  // Requests answered unsafe and not yet known durable (tests, status).
  size_t unsafe_count();

  // What this session knows under directory leases (revokes arrive on the
  // lease stream, kept open by a background thread).
  DirLeases& leases() { return leases_; }
  // Recalls of buffered writes (LeaseEvent.flush): the MDS is about to show
  // file `ino` to another session. The handler runs on the lease thread, so
  // it must return at once and call `ack` once the writes are flushed.
  // Without a handler (or after SetFlushRecall(nullptr) returned) recalls
  // are acknowledged at once. `hold` (LeaseEvent.hold): a truncate is about
  // to cut the file's objects; once flushed, nothing more of the file goes
  // to the OSDs until the hold-released handler is called for it (or the
  // stream ends).
  // `write_through` (LeaseEvent.write_through): another session opened the
  // file; from now on (as of `seq`) this client writes it through.
  struct FlushRequest {
    uint64_t ino = 0;
    bool hold = false;
    bool write_through = false;
    uint64_t seq = 0;
  };
  using FlushRecall = std::function<void(const FlushRequest& recall, std::function<void()> ack)>;
  void SetFlushRecall(FlushRecall handler);
  // Another session changed file `ino`'s data or size (LeaseEvent.inval:
  // its size after the change, and its last byte if the MDS knows it): the
  // handler drops what this client caches of its data (and the kernel's
  // pages), then calls `ack`; it must return at once. Without a handler
  // the event is acknowledged at once.
  using DataInval = std::function<void(const pb::LeaseEvent& inval, std::function<void()> ack)>;
  void SetDataInval(DataInval handler);
  void SetHoldReleased(std::function<void(uint64_t ino)> handler);
  // Called when the lease stream ends: until the next one is up, the MDS
  // cannot recall anything this client buffers.
  void SetStreamLost(std::function<void()> handler);
  // Called on the lease thread for each revoked directory lease, after the
  // client forgot what it knew of the directory and before the revoke is
  // acknowledged: what the handler does before it returns happens before
  // the other session's change. It may block (the lease thread waits), but
  // not on a request of this session that the MDS holds for the revoke.
  using DirRevoked = std::function<void(uint64_t ino)>;
  void SetDirRevoked(DirRevoked handler);
  // The same for each revoked attribute cap (LeaseEvent.caps with As Fs), after the
  // client stopped trusting the inode's attributes.
  void SetAttrsRevoked(DirRevoked handler);
  // Called on the lease thread after a recall for memory, with the inodes
  // whose caps were given back (their revokes ran first): a frontend may
  // let its own copies of them go. It must not block.
  using CapsGivenBack = std::function<void(std::vector<uint64_t> inos)>;
  void SetCapsGivenBack(CapsGivenBack handler);
  // How many inodes the client caches (its frontend's, for a mount the
  // kernel's): sent with each renewal, for `weft client ls`.
  void NoteCachedInodes(uint64_t n) { cached_inodes_.store(n, std::memory_order_relaxed); }
  // Called with each new OSD epoch barrier a reply carries (an eviction
  // fenced a client at that epoch): it returns once the object client has
  // that map, before the reply is used (and any data I/O it permits).
  void SetEpochBarrier(std::function<void(uint64_t epoch)> handler);
  // This mount was evicted: every request fails with it (EIO at the FUSE
  // edge) until Recover, or until it is mounted again. OK while not.
  absl::Status evicted();
  // Called once per eviction, after it was noted (recover_session=clean
  // starts over from there); it must return at once.
  void SetEvictedHandler(std::function<void()> handler);
  // Starts over after an eviction: a new session, whose OSD identity is
  // `osd_client` (the old one is blocklisted); the evicted session's leases,
  // locks and unanswered or unsafe requests are gone with it.
  absl::Status Recover(const std::string& osd_client);

  absl::StatusOr<pb::FsStatusReply> FsStatus();
  // Ends the session now (its open files are released).
  absl::Status Close();

 private:
  explicit MetaClient(MetaClientOptions options)
      : options_(std::move(options)), osd_client_(options_.osd_client) {}
  absl::Status Resolve();
  absl::Status OpenSession(uint64_t reclaim);
  // Resolve and OpenSession(0), retried until op_timeout_ms (Connect, Recover).
  absl::Status OpenNewSession();
  // The MDS lost the session: so are its locks.
  void LoseAllLocks();
  std::shared_ptr<grpc::Channel> Channel();
  void RenewLoop();
  // Follows the fsmap by push (Filesystems.WatchFsMap) from any MDS of the
  // list or that the map showed alive, taking the next when one stays
  // silent past kMapSilence (frozen);
  // when rank 0 moves, points the calls there and cancels those waiting on
  // the old address (CallWithTid sends them again).
  void MapLoop();
  void UseAddress(const std::string& addr);
  static constexpr absl::Duration kMapSilence = absl::Seconds(3);
  // Keeps the lease stream open; applies and acknowledges revokes.
  void LeaseLoop();
  // One event of the lease stream after its hello, applied before the
  // next is read (revokes) or handed to its handler (recalls).
  void HandleLeaseEvent(const pb::LeaseEvent& event);
  void AckLease(const pb::LeaseEvent& event);
  // Tells the file system client the kernel must stop trusting what a revoke
  // or give-back of `event.caps()` took (its attributes, its names).
  void Revoked(const pb::LeaseEvent& event);
  // A recall for memory (LeaseEvent.recall_caps): gives back `n` caps and
  // leases (DirLeases::GiveBack), the kernel's copies first, and tells the
  // MDS in batches of kAcksPerRequest.
  void GiveBack(uint32_t n);
  static constexpr size_t kAcksPerRequest = 4096;
  // Takes what a reply says: unsafe requests now durable are dropped; a new
  // boot id means the MDS restarted and Reconnect must run first.
  void Observe(const pb::MetaReply& reply);
  // The MDS says this client was evicted: remembered for good.
  void NoteEvicted(const absl::Status& status);
  // Sends open files and unsafe requests to a restarted MDS (once per boot).
  absl::Status Reconnect(uint64_t boot);
  void Forget(uint64_t tid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Unsafe requests at or below `durable_seq` are safe now: dropped.
  void DropDurableLocked(uint64_t durable_seq) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const MetaClientOptions options_;
  rpc::ChannelCache channels_;
  // The lease stream's own connection: a thread parked on it must not be
  // the one that polls the replies of calls (fuse-client/fuse/main.cc).
  rpc::ChannelCache stream_channels_;
  std::atomic<uint64_t> next_tid_{1};
  uint64_t session_ = 0;
  uint64_t root_ = 1;
  std::atomic<uint64_t> inline_max_bytes_{0};

  absl::Mutex mu_;
  std::string addr_ ABSL_GUARDED_BY(mu_);
  std::set<uint64_t> inflight_ ABSL_GUARDED_BY(mu_);
  int64_t timeout_ms_ ABSL_GUARDED_BY(mu_) = 60000;
  uint64_t boot_ ABSL_GUARDED_BY(mu_) = 0;  // the MDS incarnation we talk to
  // Requests answered unsafe: tid -> the request as it would be resent.
  std::map<uint64_t, pb::MetaRequest> unsafe_ ABSL_GUARDED_BY(mu_);
  std::function<std::vector<pb::OpenRef>()> open_files_ ABSL_GUARDED_BY(mu_);
  LocksHeld locks_held_ ABSL_GUARDED_BY(mu_);
  LocksLost locks_lost_ ABSL_GUARDED_BY(mu_);
  absl::Mutex reconnect_mu_;  // one Reconnect at a time; taken before mu_
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* lease_ctx_ ABSL_GUARDED_BY(mu_) = nullptr;  // to cancel at Close
  grpc::ClientContext* map_ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::Time map_heard_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  // Calls in flight and the address each went to: cancelled when rank 0
  // moves away from it; `moves_` counts the moves.
  std::map<grpc::ClientContext*, std::string> calls_ ABSL_GUARDED_BY(mu_);
  uint64_t moves_ ABSL_GUARDED_BY(mu_) = 0;
  DirLeases leases_;
  absl::Mutex recall_mu_;  // held while the handler runs
  FlushRecall flush_recall_ ABSL_GUARDED_BY(recall_mu_);
  DataInval data_inval_ ABSL_GUARDED_BY(recall_mu_);
  std::function<void()> stream_lost_ ABSL_GUARDED_BY(recall_mu_);
  std::function<void(uint64_t)> hold_released_ ABSL_GUARDED_BY(recall_mu_);
  DirRevoked dir_revoked_ ABSL_GUARDED_BY(recall_mu_);
  DirRevoked attrs_revoked_ ABSL_GUARDED_BY(recall_mu_);
  CapsGivenBack caps_given_back_ ABSL_GUARDED_BY(recall_mu_);
  std::atomic<uint64_t> cached_inodes_{0};
  std::atomic<uint64_t> osd_epoch_barrier_{0};
  absl::Mutex barrier_mu_;  // held while the handler runs: one wait at a time
  std::function<void(uint64_t)> epoch_barrier_ ABSL_GUARDED_BY(barrier_mu_);
  std::atomic<bool> evicted_{false};
  absl::Status evicted_status_ ABSL_GUARDED_BY(mu_);
  std::string osd_client_ ABSL_GUARDED_BY(mu_);  // options_.osd_client, until Recover
  absl::Mutex evicted_mu_;
  std::function<void()> evicted_handler_ ABSL_GUARDED_BY(evicted_mu_);
  std::thread renewer_;
  std::thread lease_thread_;
  std::thread map_thread_;
};

// Filesystem administration (weft fs ...): sent to the elected MDS.
class FsAdmin {
 public:
  explicit FsAdmin(std::vector<std::string> mds_addrs, int64_t timeout_ms = 30000)
      : mds_addrs_(std::move(mds_addrs)), timeout_ms_(timeout_ms) {}

  absl::Status FsNew(const std::string& name, const std::string& metadata_pool,
                     const std::string& data_pool);
  absl::Status FsAddDataPool(const std::string& name, const std::string& data_pool);
  absl::StatusOr<pb::FsMap> FsList();
  // The fsmap with the live MDS daemons and the map manager's address.
  absl::StatusOr<pb::FsListReply> FsListWithDaemons();
  absl::Status FsSet(const std::string& name, const std::string& key, const std::string& value);
  // What the map manager did, for the operator.
  absl::StatusOr<std::string> MdsFail(const std::string& who);

 private:
  absl::Status Call(const std::function<absl::Status(pb::Filesystems::Stub*)>& fn);
  // One of the Filesystems service's calls answered with an AdminReply
  // (FsNew, FsAddDataPool, FsSet, MdsFail), sent to the map manager; the
  // reply when its status is OK.
  template <typename Request>
  using AdminMethod = grpc::Status (pb::Filesystems::Stub::*)(grpc::ClientContext*, const Request&,
                                                               pb::AdminReply*);
  template <typename Request>
  absl::StatusOr<pb::AdminReply> AdminCall(AdminMethod<Request> method, const Request& req);

  std::vector<std::string> mds_addrs_;
  int64_t timeout_ms_;
  rpc::ChannelCache channels_;
};

}  // namespace weft::client
