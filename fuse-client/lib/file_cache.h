// The data one client holds for one file while it is open: buffered writes
// not yet on the OSDs (write-back) and data read ahead of a sequential
// reader. Every open handle of the file in this client shares it.
//
// Writes land in `dirty_` and return. Once `flush_bytes` are buffered, a
// background flush moves them into one batch (`flushing_`), up to the last
// object-set boundary so that objects go whole (TakeBatchLocked), and writes
// the batch to the OSDs, one request per object, all objects in parallel, then
// reports the new end and mtime through `OnFlushed` (the MDS's WrittenOp).
// Writers keep buffering into `dirty_` meanwhile; at most one batch per file
// is in flight, so batches reach the OSDs in the order they were written.
// Flush() (fsync, close, truncate, layout and cap changes) writes everything
// buffered before it was called and waits.
//
// Attribute changes this client made on its own (AttrChanges, under the
// file's attribute authority) travel with the batches the same way: each
// batch reports those made since the one before, after its size and mtime.
//
// Reads see the file as this client wrote it: bytes from the OSDs, then the
// batch in flight over them, then `dirty_` over that. The buffered bytes are
// captured before the OSD read starts, so a batch that completes meanwhile is
// either in the capture or already on the OSDs.
//
// Readahead: a reader whose offsets follow on from its last read (within a
// slack, as FUSE delivers the kernel's parallel reads out of order) has the
// next `window` bytes fetched in chunks in the background; the window starts
// at `readahead_bytes` and doubles per chunk consumed up to
// `readahead_max_bytes`. A chunk carries the buffered bytes of its range as
// of when it was issued; any later write to its range drops it.
//
// Write-back and readahead run on separate pools: after an untar, closes
// queue thousands of small-file batches, and a reader's chunk queued behind
// them waited for the whole backlog. A reader that needs a chunk no thread
// has started fetches it itself rather than wait for a pool thread, and a
// Flush() (fsync, release, an open settling attributes) writes a batch still
// queued itself: a `cat` of the last file right after an untar took 20 s.
//
// Inline data (EnableInline): while the MDS keeps the file's bytes in its
// inode (Attr.data_inline), a batch that fits goes to the MDS with its
// report (WrittenOp.inline_writes) instead of to the OSDs, and reads take
// the bytes from a copy fetched from the MDS (at the open, or when the
// attributes show a newer version), with zeros past them. A batch that does
// not fit, or that the MDS refuses, first has the MDS move the bytes to the
// file's first object; from then on the file is like any other.
//
// A failed flush is a sticky error (as LevelDB's after a failed sync): the
// next Write, Flush and Read of the file return it, so close() and fsync()
// report lost writes, and the application stops writing.
//
// Thread-safe. Lock order: FileCache::mu_ is taken after
// FileSystemClient::mu_ and never held across I/O or a callback.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/executor/thread_pool.h"
#include "common/objects/extent_map.h"
#include "common/objects/striped_io.h"
#include "common/posix/permission.h"

namespace weft::client {

struct FileCacheOptions {
  uint64_t flush_bytes = 32ull << 20;           // start writing back at this much dirty
  uint64_t dirty_bytes_max = 64ull << 20;       // writers wait above this, per file
  uint64_t readahead_bytes = 8ull << 20;        // first window of a sequential reader
  uint64_t readahead_max_bytes = 64ull << 20;   // the window's growth stops here
  uint64_t readahead_chunk_bytes = 4ull << 20;  // one background read
  uint64_t max_file_bytes = uint64_t{1} << 60;  // writes past it: EFBIG (the MDS's limit)
};

// Counts the buffered bytes of every file of a client: over `max_bytes`, a
// writer first flushes its own file.
class DirtyBudget {
 public:
  explicit DirtyBudget(uint64_t max_bytes) : max_bytes_(max_bytes) {}
  void Add(int64_t delta);
  bool over() {
    absl::MutexLock lock(&mu_);
    return bytes_ > static_cast<int64_t>(max_bytes_);
  }
  uint64_t bytes() {
    absl::MutexLock lock(&mu_);
    return static_cast<uint64_t>(bytes_);
  }

 private:
  const uint64_t max_bytes_;
  absl::Mutex mu_;
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

// Changes of a file's mode, owner and times that this client made on its own
// (it created the file and holds MetaReply.attr_authority): explicit values,
// `valid` among kSetMode, kSetUid, kSetGid, kSetAtime, kSetMtime; `ctime_ns`
// is the time of the latest change.
struct AttrChanges {
  uint32_t valid = 0;
  uint32_t mode = 0, uid = 0, gid = 0;  // mode: permission bits only
  int64_t atime_ns = 0, mtime_ns = 0, ctime_ns = 0;

  bool empty() const { return valid == 0; }
  // `later` on top of these.
  void Add(const AttrChanges& later);
};

class FileCache : public std::enable_shared_from_this<FileCache> {
 public:
  // Told after a batch is on the OSDs: the file extends at least to `end`,
  // was last written at `mtime_ns`, its objects grew by `allocated_delta`
  // bytes (objects::StripedIo::WriteExtents), and `attrs` changed since the last
  // batch (reported with it, after the size and mtime). Its error fails the
  // flush.
  using OnFlushed = std::function<absl::Status(uint64_t end, int64_t mtime_ns,
                                               int64_t allocated_delta, const AttrChanges& attrs)>;

  // Background work holds a reference: `io`, the pools and `budget` must
  // outlive the pools' last tasks (the owner destroys the pools first).
  // Batches are written on `flush_pool`, readahead fetched on `read_pool`.
  static std::shared_ptr<FileCache> Create(objects::FileData data, objects::StripedIo* io, ThreadPool* flush_pool,
                                           ThreadPool* read_pool, DirtyBudget* budget,
                                           FileCacheOptions options, OnFlushed on_flushed);
  ~FileCache();  // returns what is still buffered to the budget

  objects::FileData data();
  uint64_t max_file_bytes() const { return max_bytes_; }
  // A new layout for the file (set while it is still empty: nothing is
  // buffered or on the OSDs under the old one). Drops data read ahead.
  void SetData(const objects::FileData& data);

  // Buffers `bytes` at `offset`, written at `mtime_ns`. May wait for this
  // file's batch in flight (over dirty_bytes_max) or flush this file (when the
  // client is over its budget). EFBIG past max_file_bytes.
  absl::Status Write(uint64_t offset, absl::string_view bytes, int64_t mtime_ns);
  // Write at the end of the file: the larger of `known_size` (the MDS's) and
  // the end of every write through this cache since it was created or last
  // truncated; atomic with other appends. Returns the offset written at.
  absl::StatusOr<uint64_t> Append(uint64_t known_size, absl::string_view bytes,
                                  int64_t mtime_ns);
  // `length` bytes at `offset` of a file of `size` bytes (the caller clamps to
  // the size; holes and bytes past the objects are zeros). `sequential_ok`
  // false (O_DIRECT) never reads ahead.
  absl::StatusOr<std::string> Read(uint64_t offset, uint64_t length, uint64_t size,
                                   bool sequential_ok);
  // Writes everything buffered when called to the OSDs and reports it.
  absl::Status Flush();
  // Starts a background flush if something is buffered since before `t`, or
  // if `force`; returns at once, with the error of an earlier flush if any.
  absl::Status FlushInBackground(absl::Time dirty_before, bool force);
  // The file's mtime was just set explicitly (utimensat): the writes
  // buffered so far, and the batch in flight, report no mtime to the MDS.
  // Waits while a batch is reporting one.
  void TimesSet();
  // Forgets data read ahead (another client may have written: close-to-open)
  // and buffered bytes at or past `size` (a truncate; after Flush, normally none).
  void DropReadahead();
  void Truncated(uint64_t size);

  // The mount was evicted and starts over with a new session
  // (recover_session=clean): what is buffered is dropped (its writes were
  // fenced at the OSDs anyway), and every later write or flush fails with
  // `why`. Returns once no batch of this cache is writing, and none starts
  // after: the caller may then give the object client a new name, which
  // the OSDs do not refuse, without a batch of the evicted session going
  // out under it.
  void Abandon(const absl::Status& why);

  // Whether every write goes through to the OSDs and is reported before it
  // returns: another session holds the file open and someone writes it
  // (MetaReply.write_through with an open, LeaseEvent.write_through with a
  // recall). Of the two, the one with the higher seq stands (they cross on
  // the wire); seq 0 says nothing.
  void SetWriteThrough(bool on, uint64_t seq);
  bool write_through();

  // The MDS is cutting the file's objects (another client's truncate; the
  // recall flushed this one's writes first): no batch starts writing to the
  // OSDs until ReleaseWrites. HoldWrites returns at once; AwaitWritesHeld
  // waits for a batch that was already writing. Writers keep buffering
  // (up to dirty_bytes_max), Flush waits.
  void HoldWrites();
  void AwaitWritesHeld();
  void ReleaseWrites();

  // Attribute changes made on their own: the file was created by this
  // session, which holds MetaReply.attr_authority for it, until
  // DropAttrAuthority (the MDS recalled the file, or the session may no
  // longer decide alone). ChangeAttrs buffers `change` and returns true
  // while the authority is held; false (nothing buffered) once dropped.
  // Flushes report the changes like writes, in order with them.
  void GrantAttrAuthority();
  void DropAttrAuthority();
  bool attr_authority();
  bool ChangeAttrs(const AttrChanges& change);
  // Attribute changes buffered or on their way to the MDS.
  bool attrs_pending();
  // Nothing buffered and nothing on its way: Flush returns at once.
  bool clean();

  // Inline data: how the MDS answers for it.
  struct InlineWritten {
    bool applied = false;  // else refused: the bytes go to objects
    uint64_t version = 0;  // of the inode after them
  };
  struct InlineFetched {
    bool on = false;  // false: the data is in objects now
    std::string bytes;
    uint64_t version = 0;
  };
  struct InlineHooks {
    // A batch within the limit, with its bytes (WrittenOp.inline_writes).
    std::function<absl::StatusOr<InlineWritten>(uint64_t end, int64_t mtime_ns,
                                                const AttrChanges& attrs,
                                                const objects::ExtentMap& extents)>
        write;
    std::function<absl::Status()> move;  // to objects (InlineOp.uninline)
    std::function<absl::StatusOr<InlineFetched>()> fetch;
  };
  // The file's data is inline (as of `version`, with `bytes` if known):
  // batches of at most `limit` bytes from offset 0 go to the MDS. Copies of
  // the bytes are kept while `copies` (the client's, all files) allows.
  void EnableInline(InlineHooks hooks, uint64_t limit, DirtyBudget* copies, uint64_t version,
                    const std::string* bytes);
  // What an open, or the attributes a read goes by, say: `on`
  // (Attr.data_inline) at `version`, with the bytes if the reply had them.
  // A newer version drops the copy; off is for good.
  void NoteInline(bool on, uint64_t version, const std::string* bytes);
  // Forgets the copy (versions may have been renumbered: an MDS restart).
  void DropInlineCopy();
  bool inline_on();
  // The data is inline and bytes up to `end` may stay so.
  bool InlineCovers(uint64_t end);
  // Has the MDS move the data to objects (before a hole is punched).
  absl::Status MoveToObjects();

  // Buffered writes not yet reported to the MDS: the file's end and mtime as
  // this client sees them (end 0 when nothing is pending), and the attribute
  // changes (a write after an mtime change drops it: the write's is later).
  struct Pending {
    uint64_t end = 0;
    int64_t mtime_ns = 0;
    uint64_t bytes = 0;  // buffered or being flushed, not yet reported
    AttrChanges attrs;
  };
  Pending pending();

 private:
  struct Batch {
    objects::FileData data;  // where it goes
    objects::ExtentMap extents;
    uint64_t end = 0;
    int64_t mtime_ns = 0;
    uint64_t times_gen = 0;  // TimesSet calls before it was taken
    AttrChanges attrs;
  };
  struct Chunk {  // data read ahead: [offset, offset + length)
    uint64_t offset = 0;
    uint64_t length = 0;
    objects::FileData data;          // where it is read from
    objects::ExtentMap captured;     // the buffered bytes of its range when it was issued
    absl::Mutex mu;
    bool claimed ABSL_GUARDED_BY(mu) = false;  // a thread is fetching it
    bool done ABSL_GUARDED_BY(mu) = false;
    absl::StatusOr<std::string> bytes ABSL_GUARDED_BY(mu);
  };

  FileCache(objects::FileData data, objects::StripedIo* io, ThreadPool* flush_pool, ThreadPool* read_pool,
            DirtyBudget* budget, FileCacheOptions options, OnFlushed on_flushed);
  using Tasks = std::vector<std::function<void()>>;  // submitted once mu_ is released
  void Submit(ThreadPool* pool, Tasks tasks);
  // Reads the chunk unless another thread already claimed it.
  void Fetch(Chunk& c);
  absl::StatusOr<uint64_t> Put(uint64_t offset, const uint64_t* append_to,
                               absl::string_view bytes, int64_t mtime_ns);

  // `claimed`: the caller writes it now (else it is queued for the background).
  // `whole_sets`: the batch stops at the last object-set boundary below what
  // is buffered (when something lies below it), and the bytes past it stay
  // buffered: a streaming writer's objects then reach the OSDs whole, once,
  // rather than a part now and the rest appended by the next batch (which
  // the OSDs write through the page cache, and EC pools per stripe).
  std::shared_ptr<const Batch> TakeBatchLocked(bool claimed, bool whole_sets)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteBatch(const Batch& batch) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the batch in flight; with `chain`, returns the next one to write
  // when enough is buffered again (and no Flush waits), else null.
  std::shared_ptr<const Batch> FinishBatchLocked(const Batch& batch, const absl::Status& status,
                                                 bool chain) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes batches in the background until too little is buffered; the
  // first with `whole_sets` (TakeBatchLocked), those chained after it always.
  void StartBackgroundLocked(Tasks* tasks, bool whole_sets) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunBackground(std::shared_ptr<const Batch> batch);
  // The buffered bytes of [offset, offset + length), batch then dirty.
  objects::ExtentMap CaptureLocked(uint64_t offset, uint64_t length) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::string> ReadThrough(uint64_t offset, uint64_t length);
  // The file's bytes without what is buffered: the inline copy, else the OSDs.
  absl::StatusOr<std::string> ReadBase(const objects::FileData& data, uint64_t offset, uint64_t length);
  // Replaces the inline copy (none: drop it), within inline_budget_.
  void KeepCopyLocked(std::optional<std::string> bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Around a batch's report to the MDS: the mtime it reports (0 when times
  // were set explicitly after its writes), and TimesSet waits until EndReport.
  int64_t BeginReport(const Batch& batch);
  void EndReport();
  // Reports `batch` to the MDS with its bytes; false if they must go to objects.
  absl::StatusOr<bool> WriteInline(const Batch& batch, int64_t mtime_ns);
  void DropChunksLocked(uint64_t offset, uint64_t length) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Issues chunks up to `until` (clamped to `size`) as tasks for read_pool_;
  // chunks covering [offset, offset + length) are returned if all exist.
  std::vector<std::shared_ptr<Chunk>> ReadAheadLocked(uint64_t offset, uint64_t length,
                                                      uint64_t size, Tasks* tasks)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t max_bytes_;
  objects::StripedIo* const io_;
  ThreadPool* const flush_pool_;
  ThreadPool* const read_pool_;
  DirtyBudget* const budget_;
  const FileCacheOptions options_;
  const OnFlushed on_flushed_;

  absl::Mutex mu_;
  objects::FileData data_ ABSL_GUARDED_BY(mu_);
  bool write_through_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t buffer_seq_ ABSL_GUARDED_BY(mu_) = 0;
  objects::ExtentMap dirty_ ABSL_GUARDED_BY(mu_);
  uint64_t dirty_end_ ABSL_GUARDED_BY(mu_) = 0;    // of writes since the last batch taken
  uint64_t written_end_ ABSL_GUARDED_BY(mu_) = 0;  // of every write (appends go here)
  int64_t dirty_mtime_ns_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time dirty_since_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  std::shared_ptr<const Batch> flushing_ ABSL_GUARDED_BY(mu_);  // the batch in flight
  bool flushing_claimed_ ABSL_GUARDED_BY(mu_) = false;  // being written (else queued)
  absl::Status error_ ABSL_GUARDED_BY(mu_);                     // sticky
  int flush_waiters_ ABSL_GUARDED_BY(mu_) = 0;  // Flush() calls: the background stops chaining
  uint64_t times_gen_ ABSL_GUARDED_BY(mu_) = 0;    // TimesSet calls
  bool reporting_ ABSL_GUARDED_BY(mu_) = false;   // a batch's mtime is on its way to the MDS
  bool held_ ABSL_GUARDED_BY(mu_) = false;        // HoldWrites: no batch starts writing
  bool writing_ ABSL_GUARDED_BY(mu_) = false;     // a batch is past the hold, writing
  bool abandoned_ ABSL_GUARDED_BY(mu_) = false;   // Abandon: no batch writes any more
  bool attr_authority_ ABSL_GUARDED_BY(mu_) = false;
  AttrChanges attrs_ ABSL_GUARDED_BY(mu_);  // since the last batch taken

  InlineHooks inline_hooks_;  // set once, before any other use
  bool inline_on_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t inline_limit_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<std::string> inline_copy_ ABSL_GUARDED_BY(mu_);  // none: fetch first
  DirtyBudget* inline_budget_ ABSL_GUARDED_BY(mu_) = nullptr;
  int64_t inline_charged_ ABSL_GUARDED_BY(mu_) = 0;  // of inline_budget_, for the copy
  // Of the copy, or newer: the newest version of the inode this cache knows.
  uint64_t inline_version_ ABSL_GUARDED_BY(mu_) = 0;

  std::map<uint64_t, std::shared_ptr<Chunk>> chunks_ ABSL_GUARDED_BY(mu_);  // by offset
  uint64_t next_read_ ABSL_GUARDED_BY(mu_) = 0;  // where a sequential reader goes on
  uint64_t window_ ABSL_GUARDED_BY(mu_) = 0;     // 0: not reading sequentially
};

}  // namespace weft::client
