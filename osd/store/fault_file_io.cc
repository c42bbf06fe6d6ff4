#include "osd/store/fault_file_io.h"

#include <algorithm>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status/status.h"

namespace weft::osd {
namespace {

constexpr uint64_t kSectorBytes = 512;

// "/a/b/c" -> {"/a/b", "c"}; "/a" -> {"/", "a"}.
std::pair<std::string, std::string> SplitPath(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  if (slash == 0) return {"/", path.substr(1)};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

void WriteAt(std::string* data, uint64_t offset, absl::string_view bytes) {
  if (data->size() < offset + bytes.size()) data->resize(offset + bytes.size(), '\0');
  std::copy(bytes.begin(), bytes.end(), data->begin() + static_cast<ptrdiff_t>(offset));
}

}  // namespace

struct FaultInjectionFileIo::Inode {
  struct PendingOp {
    bool is_write;
    uint64_t offset;    // write offset, or the new size of a truncate
    std::string bytes;  // write data
  };
  std::string data;     // what reads see
  std::string durable;  // as of the last successful Sync
  std::vector<PendingOp> pending;
};

struct FaultInjectionFileIo::Dir {
  struct PendingEntry {
    std::string name;
    std::shared_ptr<Inode> inode;  // nullptr: removal
  };
  std::map<std::string, std::shared_ptr<Inode>> entries;
  std::map<std::string, std::shared_ptr<Inode>> durable;
  std::vector<PendingEntry> pending;
};

class FaultFile final : public RandomFile {
 public:
  FaultFile(FaultInjectionFileIo* fs, std::string path,
            std::shared_ptr<FaultInjectionFileIo::Inode> inode, bool writable)
      : fs_(fs), path_(std::move(path)), inode_(std::move(inode)), writable_(writable) {}

  absl::Status Read(uint64_t offset, size_t n, std::string* out) override {
    absl::MutexLock lock(&fs_->mu_);
    RETURN_IF_ERROR(fs_->CheckReadableLocked());
    const std::string& data = inode_->data;
    out->clear();
    if (offset < data.size()) {
      out->assign(data, offset, std::min<uint64_t>(n, data.size() - offset));
    }
    return absl::OkStatus();
  }

  absl::Status Write(uint64_t offset, absl::string_view bytes) override {
    absl::MutexLock lock(&fs_->mu_);
    if (!writable_) return absl::InvalidArgumentError(absl::StrCat("write to read-only ", path_));
    bool crash_now = false;
    absl::Status status = fs_->CountOpLocked(absl::StrCat("write ", path_), &crash_now);
    // The write that the machine dies in lands in part.
    if (status.ok() || crash_now) {
      absl::string_view landed = status.ok() ? bytes : bytes.substr(0, bytes.size() / 2);
      WriteAt(&inode_->data, offset, landed);
      inode_->pending.push_back({true, offset, std::string(landed)});
    }
    return status;
  }

  absl::Status Truncate(uint64_t size) override {
    absl::MutexLock lock(&fs_->mu_);
    if (!writable_) return absl::InvalidArgumentError(absl::StrCat("truncate read-only ", path_));
    RETURN_IF_ERROR(fs_->CountOpLocked(absl::StrCat("truncate ", path_), nullptr));
    inode_->data.resize(size, '\0');
    inode_->pending.push_back({false, size, std::string()});
    return absl::OkStatus();
  }

  // Layout is not modelled: nothing to reserve and no step to crash at,
  // only a count for tests.
  void Preallocate(uint64_t, uint64_t length) override {
    absl::MutexLock lock(&fs_->mu_);
    fs_->preallocated_ += length;
  }

  absl::Status Sync() override {
    absl::MutexLock lock(&fs_->mu_);
    RETURN_IF_ERROR(fs_->CountOpLocked(absl::StrCat("sync ", path_), nullptr));
    if (fs_->fail_sync_in_ >= 0 && fs_->fail_sync_in_-- == 0) {
      return ErrnoError(absl::StatusCode::kDataLoss, EIO,
                        absl::StrCat("fdatasync ", path_, ": injected EIO"));
    }
    inode_->durable = inode_->data;
    inode_->pending.clear();
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> Size() override {
    absl::MutexLock lock(&fs_->mu_);
    RETURN_IF_ERROR(fs_->CheckReadableLocked());
    return inode_->data.size();
  }

 private:
  FaultInjectionFileIo* const fs_;
  const std::string path_;
  const std::shared_ptr<FaultInjectionFileIo::Inode> inode_;
  const bool writable_;
};

FaultInjectionFileIo::FaultInjectionFileIo() { dirs_["/"] = std::make_unique<Dir>(); }
FaultInjectionFileIo::~FaultInjectionFileIo() = default;

absl::Status FaultInjectionFileIo::CountOpLocked(absl::string_view what, bool* crash_now) {
  if (crash_now != nullptr) *crash_now = false;
  if (crashed_) {
    return absl::UnavailableError(absl::StrCat("injected crash: machine is down (", what, ")"));
  }
  const int64_t op = ops_++;
  op_log_.push_back(std::string(what));
  if (crash_at_ >= 0 && op >= crash_at_) {
    crashed_ = true;
    if (crash_now != nullptr) *crash_now = true;
    return absl::UnavailableError(absl::StrCat("injected crash at op ", op, " (", what, ")"));
  }
  return absl::OkStatus();
}

absl::Status FaultInjectionFileIo::CheckReadableLocked() const {
  if (crashed_) return absl::UnavailableError("injected crash: machine is down (read)");
  return absl::OkStatus();
}

FaultInjectionFileIo::Dir* FaultInjectionFileIo::FindDirLocked(const std::string& path) {
  auto it = dirs_.find(path);
  return it == dirs_.end() ? nullptr : it->second.get();
}

std::shared_ptr<FaultInjectionFileIo::Inode> FaultInjectionFileIo::FindFileLocked(
    const std::string& path) {
  auto [dir_path, name] = SplitPath(path);
  Dir* dir = FindDirLocked(dir_path);
  if (dir == nullptr) return nullptr;
  auto it = dir->entries.find(name);
  return it == dir->entries.end() ? nullptr : it->second;
}

absl::StatusOr<std::unique_ptr<RandomFile>> FaultInjectionFileIo::OpenFile(const std::string& path,
                                                                           OpenMode mode) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<Inode> inode = FindFileLocked(path);
  if (mode != OpenMode::kCreate) {
    RETURN_IF_ERROR(CheckReadableLocked());
    if (inode == nullptr) return absl::NotFoundError(absl::StrCat("open ", path, ": no such file"));
    return std::unique_ptr<RandomFile>(
        new FaultFile(this, path, std::move(inode), mode != OpenMode::kRead));
  }
  auto [dir_path, name] = SplitPath(path);
  Dir* dir = FindDirLocked(dir_path);
  if (dir == nullptr) return absl::NotFoundError(absl::StrCat("create ", path, ": no directory"));
  if (inode != nullptr || dirs_.count(path) > 0) {
    return absl::AlreadyExistsError(absl::StrCat("create ", path, ": exists"));
  }
  RETURN_IF_ERROR(CountOpLocked(absl::StrCat("create ", path), nullptr));
  inode = std::make_shared<Inode>();
  dir->entries[name] = inode;
  dir->pending.push_back({name, inode});
  return std::unique_ptr<RandomFile>(new FaultFile(this, path, std::move(inode), true));
}

absl::Status FaultInjectionFileIo::RemoveFile(const std::string& path) {
  absl::MutexLock lock(&mu_);
  auto [dir_path, name] = SplitPath(path);
  Dir* dir = FindDirLocked(dir_path);
  if (dir == nullptr || dir->entries.count(name) == 0) {
    RETURN_IF_ERROR(CheckReadableLocked());
    return absl::NotFoundError(absl::StrCat("unlink ", path, ": no such file"));
  }
  RETURN_IF_ERROR(CountOpLocked(absl::StrCat("unlink ", path), nullptr));
  dir->entries.erase(name);
  dir->pending.push_back({name, nullptr});
  return absl::OkStatus();
}

absl::Status FaultInjectionFileIo::CreateDir(const std::string& path) {
  absl::MutexLock lock(&mu_);
  auto [parent, name] = SplitPath(path);
  if (FindDirLocked(parent) == nullptr) {
    return absl::NotFoundError(absl::StrCat("mkdir ", path, ": no parent"));
  }
  if (dirs_.count(path) > 0 || FindFileLocked(path) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("mkdir ", path, ": exists"));
  }
  RETURN_IF_ERROR(CountOpLocked(absl::StrCat("mkdir ", path), nullptr));
  dirs_[path] = std::make_unique<Dir>();
  return absl::OkStatus();
}

absl::Status FaultInjectionFileIo::SyncDir(const std::string& path) {
  absl::MutexLock lock(&mu_);
  Dir* dir = FindDirLocked(path);
  if (dir == nullptr) return absl::NotFoundError(absl::StrCat("sync dir ", path, ": no such dir"));
  RETURN_IF_ERROR(CountOpLocked(absl::StrCat("syncdir ", path), nullptr));
  dir->durable = dir->entries;
  dir->pending.clear();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> FaultInjectionFileIo::ListDir(const std::string& path) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckReadableLocked());
  Dir* dir = FindDirLocked(path);
  if (dir == nullptr) return absl::NotFoundError(absl::StrCat("opendir ", path, ": no such dir"));
  std::vector<std::string> names;
  for (const auto& [name, inode] : dir->entries) names.push_back(name);
  for (const auto& [dir_path, unused] : dirs_) {
    if (dir_path != "/" && SplitPath(dir_path).first == path) {
      names.push_back(SplitPath(dir_path).second);
    }
  }
  return names;
}

absl::StatusOr<FileType> FaultInjectionFileIo::Stat(const std::string& path) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckReadableLocked());
  if (dirs_.count(path) > 0) return FileType::kDirectory;
  if (FindFileLocked(path) != nullptr) return FileType::kFile;
  return absl::NotFoundError(absl::StrCat("stat ", path, ": no such file or directory"));
}

absl::StatusOr<FsSpace> FaultInjectionFileIo::StatFs(const std::string& path) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckReadableLocked());
  return FsSpace{1ull << 40, 1ull << 39};
}

void FaultInjectionFileIo::CrashAtOp(int64_t op) {
  absl::MutexLock lock(&mu_);
  crash_at_ = op;
}

absl::Status FaultInjectionFileIo::MaybeCrash(absl::string_view what) {
  absl::MutexLock lock(&mu_);
  return CountOpLocked(what, nullptr);
}

bool FaultInjectionFileIo::crashed() const {
  absl::MutexLock lock(&mu_);
  return crashed_;
}

int64_t FaultInjectionFileIo::ops() const {
  absl::MutexLock lock(&mu_);
  return ops_;
}

uint64_t FaultInjectionFileIo::preallocated_bytes() const {
  absl::MutexLock lock(&mu_);
  return preallocated_;
}

std::vector<std::string> FaultInjectionFileIo::op_log() const {
  absl::MutexLock lock(&mu_);
  return op_log_;
}

void FaultInjectionFileIo::FailSyncAt(int64_t nth) {
  absl::MutexLock lock(&mu_);
  fail_sync_in_ = nth;
}

void FaultInjectionFileIo::PowerLoss(LossMode mode, uint64_t seed) {
  absl::MutexLock lock(&mu_);
  std::mt19937_64 rng(seed);
  auto coin = [&] { return mode == LossMode::kRandom && (rng() & 1) != 0; };
  std::set<Inode*> resolved;
  for (auto& [path, dir] : dirs_) {
    auto entries = dir->durable;
    for (const Dir::PendingEntry& change : dir->pending) {
      if (!coin()) continue;
      if (change.inode != nullptr) {
        entries[change.name] = change.inode;
      } else {
        entries.erase(change.name);
      }
    }
    for (auto& [name, inode] : entries) {
      if (!resolved.insert(inode.get()).second) continue;
      std::string data = inode->durable;
      for (const Inode::PendingOp& op : inode->pending) {
        if (!coin()) continue;
        if (!op.is_write) {
          data.resize(op.offset, '\0');
          continue;
        }
        // Keep a random subset of the write's sectors: torn and reordered.
        uint64_t pos = op.offset;
        const uint64_t end = op.offset + op.bytes.size();
        while (pos < end) {
          const uint64_t next = std::min(end, (pos / kSectorBytes + 1) * kSectorBytes);
          if (coin()) {
            WriteAt(&data, pos, absl::string_view(op.bytes).substr(pos - op.offset, next - pos));
          }
          pos = next;
        }
      }
      inode->data = data;
      inode->durable = std::move(data);
      inode->pending.clear();
    }
    dir->entries = entries;
    dir->durable = std::move(entries);
    dir->pending.clear();
  }
  crashed_ = false;
  crash_at_ = -1;
  fail_sync_in_ = -1;
}

absl::StatusOr<std::string> FaultInjectionFileIo::ReadAll(const std::string& path) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<Inode> inode = FindFileLocked(path);
  if (inode == nullptr) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  return inode->data;
}

absl::Status FaultInjectionFileIo::CorruptByte(const std::string& path, uint64_t offset) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<Inode> inode = FindFileLocked(path);
  if (inode == nullptr) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  if (offset >= inode->data.size()) return absl::OutOfRangeError("offset past end of file");
  inode->data[offset] = static_cast<char>(inode->data[offset] ^ 0xff);
  if (offset < inode->durable.size()) {
    inode->durable[offset] = static_cast<char>(inode->durable[offset] ^ 0xff);
  }
  return absl::OkStatus();
}

}  // namespace weft::osd
