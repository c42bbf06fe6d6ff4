// An in-memory FileIo for crash tests that knows what is durable.
//
// Like LevelDB's FaultInjectionTestEnv (db/fault_injection_test.cc) it tracks
// what was written since the last sync and throws it away on "power loss", but
// it keeps the file system in memory, so it can also model what the wrapper
// cannot: overwrites of already-synced bytes that are lost, and unsynced
// writes or directory entries that survive in part.
//
// Model:
//  - Each file has durable contents (as of its last successful Sync) and the
//    operations (writes, truncates) made since, in order.
//  - Each directory has durable entries (as of its last SyncDir) and the entry
//    changes (create, remove) made since. Directories themselves are durable
//    when created (the store creates its directories only in Mkfs).
//  - PowerLoss(kDropUnsynced) reverts every file and directory to its durable
//    state. PowerLoss(kRandom, seed) keeps each unsynced operation with
//    probability 1/2, and a kept write keeps a random subset of its 512-byte
//    sectors (torn, reordered writes), then makes the result durable.
//
// Crash injection: every mutating call (create, write, truncate, sync,
// directory sync, remove) and every call to MaybeCrash() -- which tests hook
// into MemKvStore writes -- takes the next "op" number. From the op passed to
// CrashAtOp() on, every call fails with Unavailable("injected crash"), as if
// the machine had stopped; the crashing write itself lands half of its bytes
// (unsynced). Reads fail too once crashed. PowerLoss() clears the crash.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "osd/store/file_io.h"

namespace weft::osd {

class FaultInjectionFileIo final : public FileIo {
 public:
  enum class LossMode { kDropUnsynced, kRandom };

  FaultInjectionFileIo();
  ~FaultInjectionFileIo() override;

  absl::StatusOr<std::unique_ptr<RandomFile>> OpenFile(const std::string& path,
                                                       OpenMode mode) override;
  absl::Status RemoveFile(const std::string& path) override;
  absl::Status CreateDir(const std::string& path) override;
  absl::Status SyncDir(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override;
  absl::StatusOr<FileType> Stat(const std::string& path) override;
  absl::StatusOr<FsSpace> StatFs(const std::string& path) override;

  // --- Fault control ---
  // Op number `op` and every later op fail (see above). -1 disables.
  void CrashAtOp(int64_t op);
  // Counts one op named `what`; fails if it is at or past the crash point.
  absl::Status MaybeCrash(absl::string_view what);
  bool crashed() const;
  // Ops counted so far, and their names ("write /d/data/..", "sync ..", ...).
  int64_t ops() const;
  std::vector<std::string> op_log() const;
  // Bytes asked for through RandomFile::Preallocate so far (layout is not
  // modelled; this is what the store decided to reserve).
  uint64_t preallocated_bytes() const;
  // The `nth` file Sync from now (0 = the next) fails with an EIO DataLoss and
  // makes nothing durable; later syncs work again.
  void FailSyncAt(int64_t nth);
  // Simulates power loss (see the model above) and clears the crash state.
  void PowerLoss(LossMode mode, uint64_t seed = 0);

  // --- Direct access for tests (ignore crash state, count no ops) ---
  absl::StatusOr<std::string> ReadAll(const std::string& path);
  // XORs the byte at `offset` with 0xff in both current and durable contents.
  absl::Status CorruptByte(const std::string& path, uint64_t offset);

 private:
  friend class FaultFile;
  struct Inode;
  struct Dir;
  struct Lookup;

  absl::Status CountOpLocked(absl::string_view what, bool* crash_now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckReadableLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Dir* FindDirLocked(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<Inode> FindFileLocked(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Dir>> dirs_ ABSL_GUARDED_BY(mu_);
  int64_t ops_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t preallocated_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t crash_at_ ABSL_GUARDED_BY(mu_) = -1;
  bool crashed_ ABSL_GUARDED_BY(mu_) = false;
  int64_t fail_sync_in_ ABSL_GUARDED_BY(mu_) = -1;
  std::vector<std::string> op_log_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::osd
