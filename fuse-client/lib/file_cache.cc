#include "fuse-client/lib/file_cache.h"

#include <algorithm>
#include <cerrno>

#include "absl/cleanup/cleanup.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "proto/mds_client.pb.h"

namespace weft::client {

void DirtyBudget::Add(int64_t delta) {
  absl::MutexLock lock(&mu_);
  bytes_ += delta;
  // Every byte given back was taken first: the count never goes below 0.
  DCHECK(bytes_ >= 0) << "dirty budget at " << bytes_ << " after " << delta;
}

void AttrChanges::Add(const AttrChanges& later) {
  if (later.valid & posix::kSetMode) mode = later.mode;
  if (later.valid & posix::kSetUid) uid = later.uid;
  if (later.valid & posix::kSetGid) gid = later.gid;
  if (later.valid & posix::kSetAtime) atime_ns = later.atime_ns;
  if (later.valid & posix::kSetMtime) mtime_ns = later.mtime_ns;
  ctime_ns = std::max(ctime_ns, later.ctime_ns);
  valid |= later.valid;
}

std::shared_ptr<FileCache> FileCache::Create(objects::FileData data, objects::StripedIo* io,
                                             ThreadPool* flush_pool, ThreadPool* read_pool,
                                             DirtyBudget* budget, FileCacheOptions options,
                                             OnFlushed on_flushed) {
  return std::shared_ptr<FileCache>(new FileCache(std::move(data), io, flush_pool, read_pool,
                                                  budget, std::move(options),
                                                  std::move(on_flushed)));
}

FileCache::FileCache(objects::FileData data, objects::StripedIo* io, ThreadPool* flush_pool, ThreadPool* read_pool,
                     DirtyBudget* budget, FileCacheOptions options, OnFlushed on_flushed)
    : max_bytes_(options.max_file_bytes),
      io_(io),
      flush_pool_(flush_pool),
      read_pool_(read_pool),
      budget_(budget),
      options_(std::move(options)),
      on_flushed_(std::move(on_flushed)),
      data_(std::move(data)) {}

objects::FileData FileCache::data() {
  absl::MutexLock lock(&mu_);
  return data_;
}

void FileCache::SetData(const objects::FileData& data) {
  absl::MutexLock lock(&mu_);
  data_ = data;
  chunks_.clear();
}

FileCache::~FileCache() {
  // No task runs (each holds a reference), so nothing is in flight; what is
  // still buffered was never flushed (the owner flushes before dropping).
  uint64_t left = dirty_.bytes();
  if (left > 0) {
    LOG(WARNING) << "op=drop_cache ino=" << data_.ino << " unflushed_bytes=" << left;
    budget_->Add(-static_cast<int64_t>(left));
  }
  absl::MutexLock lock(&mu_);
  KeepCopyLocked(std::nullopt);
}

void FileCache::KeepCopyLocked(std::optional<std::string> bytes) {
  if (inline_budget_ != nullptr) inline_budget_->Add(-inline_charged_);
  inline_charged_ = 0;
  inline_copy_.reset();
  if (!bytes.has_value()) return;
  if (inline_budget_ != nullptr) {
    inline_budget_->Add(static_cast<int64_t>(bytes->size()));
    if (inline_budget_->over()) {  // reads fetch the bytes each time instead
      inline_budget_->Add(-static_cast<int64_t>(bytes->size()));
      return;
    }
    inline_charged_ = static_cast<int64_t>(bytes->size());
  }
  inline_copy_ = std::move(bytes);
}

int64_t FileCache::BeginReport(const Batch& batch) {
  absl::MutexLock lock(&mu_);
  // 0: explicit times came after the batch's writes (TimesSet).
  const int64_t mtime_ns = batch.times_gen == times_gen_ ? batch.mtime_ns : 0;
  reporting_ = mtime_ns != 0;
  return mtime_ns;
}

void FileCache::EndReport() {
  absl::MutexLock lock(&mu_);
  reporting_ = false;
}

void FileCache::Submit(ThreadPool* pool, Tasks tasks) {
  for (auto& t : tasks) pool->Submit(std::move(t));
}

// ---- writes

absl::Status FileCache::Write(uint64_t offset, absl::string_view bytes, int64_t mtime_ns) {
  return Put(offset, /*append_to=*/nullptr, bytes, mtime_ns).status();
}

absl::StatusOr<uint64_t> FileCache::Append(uint64_t known_size, absl::string_view bytes,
                                           int64_t mtime_ns) {
  return Put(0, &known_size, bytes, mtime_ns);
}

absl::StatusOr<uint64_t> FileCache::Put(uint64_t offset, const uint64_t* append_to,
                                        absl::string_view bytes, int64_t mtime_ns) {
  if (budget_->over()) RETURN_IF_ERROR(Flush());
  Tasks tasks;
  {
    absl::MutexLock lock(&mu_);
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return flushing_ == nullptr || dirty_.bytes() < options_.dirty_bytes_max || !error_.ok();
    };
    mu_.Await(absl::Condition(&room));
    RETURN_IF_ERROR(error_);
    if (append_to != nullptr) offset = std::max(*append_to, written_end_);
    if (offset > max_bytes_ || bytes.size() > max_bytes_ - offset) {
      return ErrnoError(absl::StatusCode::kOutOfRange, EFBIG, "write past the maximum file size");
    }
    const uint64_t before = dirty_.bytes();
    dirty_.Insert(offset, bytes);
    budget_->Add(static_cast<int64_t>(dirty_.bytes()) - static_cast<int64_t>(before));
    dirty_end_ = std::max<uint64_t>(dirty_end_, offset + bytes.size());
    written_end_ = std::max<uint64_t>(written_end_, offset + bytes.size());
    dirty_mtime_ns_ = std::max(dirty_mtime_ns_, mtime_ns);
    attrs_.valid &= ~posix::kSetMtime;  // this write's mtime is the later one
    if (dirty_since_ == absl::InfiniteFuture()) dirty_since_ = absl::Now();
    DropChunksLocked(offset, bytes.size());
    if (dirty_.bytes() >= options_.flush_bytes && flushing_ == nullptr) {
      StartBackgroundLocked(&tasks, /*whole_sets=*/true);
    }
  }
  Submit(flush_pool_, std::move(tasks));
  return offset;
}

std::shared_ptr<const FileCache::Batch> FileCache::TakeBatchLocked(bool claimed,
                                                                   bool whole_sets) {
  auto batch = std::make_shared<Batch>();
  batch->data = data_;
  // Only sets no larger than a batch: a larger one would keep most of what
  // is buffered back (the next batch then takes it all).
  const uint64_t set = data_.layout.set_bytes();
  const uint64_t cut = set > 0 && set <= options_.flush_bytes ? dirty_.end() / set * set : 0;
  if (whole_sets && cut > 0 && dirty_.extents().begin()->first < cut) {  // cut > 0: not empty
    objects::ExtentMap tail = dirty_.SplitFrom(cut);
    batch->extents = std::move(dirty_);
    dirty_ = std::move(tail);
  } else {
    batch->extents = std::move(dirty_);
    dirty_ = objects::ExtentMap();
  }
  batch->mtime_ns = dirty_mtime_ns_;
  batch->times_gen = times_gen_;
  batch->attrs = attrs_;
  attrs_ = AttrChanges();
  if (dirty_.empty()) {
    batch->end = dirty_end_;
    dirty_end_ = 0;
    dirty_mtime_ns_ = 0;  // the batch reports it; later, the MDS's mtime stands (futimens)
    dirty_since_ = absl::InfiniteFuture();
  } else {
    // The bytes kept back report the rest of the end and the mtime, later.
    batch->end = batch->extents.end();
  }
  flushing_ = batch;
  flushing_claimed_ = claimed;
  return batch;
}

absl::Status FileCache::WriteBatch(const Batch& batch) {
  bool inline_on = false, fits = false;
  {
    absl::MutexLock lock(&mu_);
    auto free = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !held_; };
    mu_.Await(absl::Condition(&free));
    // Evicted: the object client may already carry the next session's name.
    if (abandoned_) return error_;
    writing_ = true;
    inline_on = inline_on_;
    fits = inline_on && batch.extents.end() <= inline_limit_;
  }
  absl::Cleanup written = [this] {
    absl::MutexLock lock(&mu_);
    writing_ = false;
  };
  if (fits) {
    absl::StatusOr<bool> applied = WriteInline(batch, BeginReport(batch));
    EndReport();
    RETURN_IF_ERROR(applied.status());
    if (*applied) return absl::OkStatus();
  }
  if (inline_on) RETURN_IF_ERROR(MoveToObjects());
  int64_t allocated_delta = 0;
  if (!batch.extents.empty()) {
    RETURN_IF_ERROR(io_->WriteExtents(batch.data, batch.extents, &allocated_delta));
  }
  absl::Status reported = on_flushed_(batch.end, BeginReport(batch), allocated_delta, batch.attrs);
  EndReport();
  return reported;
}

absl::StatusOr<bool> FileCache::WriteInline(const Batch& batch, int64_t mtime_ns) {
  ASSIGN_OR_RETURN(InlineWritten w,
                   inline_hooks_.write(batch.end, mtime_ns, batch.attrs, batch.extents));
  absl::MutexLock lock(&mu_);
  if (!w.applied) return false;
  // The copy follows if nothing else changed the inode in between.
  if (inline_copy_.has_value() && w.version == inline_version_ + 1) {
    std::string copy = std::move(*inline_copy_);
    for (const auto& [at, bytes] : batch.extents.extents()) {
      if (copy.size() < at + bytes.size()) copy.resize(at + bytes.size(), '\0');
      copy.replace(at, bytes.size(), bytes);
    }
    KeepCopyLocked(std::move(copy));
  } else {
    KeepCopyLocked(std::nullopt);
  }
  // The newest version known: a fetch answered before this write landed
  // is not kept (ReadBase).
  inline_version_ = std::max(inline_version_, w.version);
  return true;
}

void FileCache::EnableInline(InlineHooks hooks, uint64_t limit, DirtyBudget* copies,
                             uint64_t version, const std::string* bytes) {
  inline_hooks_ = std::move(hooks);
  absl::MutexLock lock(&mu_);
  inline_budget_ = copies;
  inline_on_ = true;
  inline_limit_ = limit;
  inline_version_ = version;
  if (bytes != nullptr) KeepCopyLocked(*bytes);
}

void FileCache::NoteInline(bool on, uint64_t version, const std::string* bytes) {
  absl::MutexLock lock(&mu_);
  if (!inline_on_) return;
  if (!on) {
    inline_on_ = false;
    KeepCopyLocked(std::nullopt);
    return;
  }
  if (bytes != nullptr && version >= inline_version_) {
    KeepCopyLocked(*bytes);
    inline_version_ = version;
  } else if (version > inline_version_) {
    KeepCopyLocked(std::nullopt);
  }
}

void FileCache::DropInlineCopy() {
  absl::MutexLock lock(&mu_);
  KeepCopyLocked(std::nullopt);
}

bool FileCache::inline_on() {
  absl::MutexLock lock(&mu_);
  return inline_on_;
}

bool FileCache::InlineCovers(uint64_t end) {
  absl::MutexLock lock(&mu_);
  return inline_on_ && end <= inline_limit_;
}

absl::Status FileCache::MoveToObjects() {
  {
    absl::MutexLock lock(&mu_);
    if (!inline_on_) return absl::OkStatus();
  }
  RETURN_IF_ERROR(inline_hooks_.move());
  absl::MutexLock lock(&mu_);
  inline_on_ = false;
  KeepCopyLocked(std::nullopt);
  chunks_.clear();  // read from the copy
  return absl::OkStatus();
}

absl::StatusOr<std::string> FileCache::ReadBase(const objects::FileData& data, uint64_t offset,
                                                uint64_t length) {
  auto slice = [&](const std::string& bytes) {
    std::string out(length, '\0');
    if (offset < bytes.size()) {
      const uint64_t n = std::min<uint64_t>(length, bytes.size() - offset);
      out.replace(0, n, bytes, offset, n);
    }
    return out;
  };
  bool on = false;
  {
    absl::MutexLock lock(&mu_);
    if (inline_on_ && inline_copy_.has_value()) return slice(*inline_copy_);
    on = inline_on_;
  }
  if (!on) return io_->Read(data, offset, length);
  ASSIGN_OR_RETURN(InlineFetched f, inline_hooks_.fetch());
  {
    absl::MutexLock lock(&mu_);
    if (f.on && inline_on_) {
      // Right for this read either way (what it captured covers any write
      // that landed after the fetch was answered); kept only if not older
      // than a write of this client's already answered.
      if (f.version >= inline_version_) {
        KeepCopyLocked(f.bytes);
        inline_version_ = f.version;
      }
      return slice(f.bytes);
    }
    inline_on_ = false;  // moved to objects meanwhile
    KeepCopyLocked(std::nullopt);
  }
  return io_->Read(data, offset, length);
}

void FileCache::TimesSet() {
  absl::MutexLock lock(&mu_);
  ++times_gen_;
  dirty_mtime_ns_ = 0;
  // A report already past the check above lands before the caller's setattr.
  auto quiet = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !reporting_; };
  mu_.Await(absl::Condition(&quiet));
}

std::shared_ptr<const FileCache::Batch> FileCache::FinishBatchLocked(const Batch& batch,
                                                                     const absl::Status& status,
                                                                     bool chain) {
  flushing_ = nullptr;
  budget_->Add(-static_cast<int64_t>(batch.extents.bytes()));
  if (!status.ok()) {
    LOG(ERROR) << "op=flush ino=" << data_.ino << " bytes=" << batch.extents.bytes()
               << " status=" << status;
    if (error_.ok()) error_ = status;
    return nullptr;
  }
  if (!chain || flush_waiters_ > 0 || dirty_.bytes() < options_.flush_bytes) return nullptr;
  return TakeBatchLocked(/*claimed=*/true, /*whole_sets=*/true);
}

void FileCache::StartBackgroundLocked(Tasks* tasks, bool whole_sets) {
  std::shared_ptr<const Batch> batch = TakeBatchLocked(/*claimed=*/false, whole_sets);
  tasks->push_back([self = shared_from_this(), batch] { self->RunBackground(batch); });
}

void FileCache::RunBackground(std::shared_ptr<const Batch> batch) {
  {
    absl::MutexLock lock(&mu_);
    if (flushing_ != batch || flushing_claimed_) return;  // a Flush() wrote it meanwhile
    flushing_claimed_ = true;
  }
  while (batch != nullptr) {
    absl::Status s = WriteBatch(*batch);
    absl::MutexLock lock(&mu_);
    batch = FinishBatchLocked(*batch, s, /*chain=*/true);
  }
}

absl::Status FileCache::Flush() {
  absl::MutexLock lock(&mu_);
  flush_waiters_++;
  // A batch still queued for the background is written here, not waited
  // for behind other files' batches (an untar leaves thousands queued, and
  // the next open of each file settles its attributes through here); then
  // what is buffered, once.
  auto idle_or_queued = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return flushing_ == nullptr || !flushing_claimed_;
  };
  bool buffered_taken = false;
  for (;;) {
    mu_.Await(absl::Condition(&idle_or_queued));
    std::shared_ptr<const Batch> batch = flushing_;
    if (batch != nullptr) {
      flushing_claimed_ = true;
    } else if (buffered_taken || !error_.ok() || (dirty_.empty() && attrs_.empty())) {
      break;
    } else {
      batch = TakeBatchLocked(/*claimed=*/true, /*whole_sets=*/false);
      buffered_taken = true;
    }
    mu_.Unlock();
    absl::Status s = WriteBatch(*batch);
    mu_.Lock();
    FinishBatchLocked(*batch, s, /*chain=*/false);  // a failure becomes error_
  }
  flush_waiters_--;
  return error_;
}

absl::Status FileCache::FlushInBackground(absl::Time dirty_before, bool force) {
  Tasks tasks;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(error_);
    if (flushing_ != nullptr || (dirty_.empty() && attrs_.empty())) return absl::OkStatus();
    if (!force && dirty_since_ >= dirty_before) return absl::OkStatus();
    StartBackgroundLocked(&tasks, /*whole_sets=*/false);
  }
  Submit(flush_pool_, std::move(tasks));
  return absl::OkStatus();
}

FileCache::Pending FileCache::pending() {
  absl::MutexLock lock(&mu_);
  Pending p;
  p.end = dirty_end_;
  p.mtime_ns = dirty_mtime_ns_;
  p.bytes = dirty_.bytes();
  if (flushing_ != nullptr) {
    p.end = std::max(p.end, flushing_->end);
    p.bytes += flushing_->extents.bytes();
    if (flushing_->times_gen == times_gen_) p.mtime_ns = std::max(p.mtime_ns, flushing_->mtime_ns);
    p.attrs = flushing_->attrs;
  }
  p.attrs.Add(attrs_);
  if (dirty_mtime_ns_ != 0) p.attrs.valid &= ~posix::kSetMtime;  // written since
  return p;
}

void FileCache::GrantAttrAuthority() {
  absl::MutexLock lock(&mu_);
  attr_authority_ = true;
}

void FileCache::DropAttrAuthority() {
  absl::MutexLock lock(&mu_);
  attr_authority_ = false;
}

bool FileCache::attr_authority() {
  absl::MutexLock lock(&mu_);
  return attr_authority_;
}

bool FileCache::ChangeAttrs(const AttrChanges& change) {
  absl::MutexLock lock(&mu_);
  if (!attr_authority_) return false;
  attrs_.Add(change);
  if (dirty_since_ == absl::InfiniteFuture()) dirty_since_ = absl::Now();
  return true;
}

bool FileCache::attrs_pending() {
  absl::MutexLock lock(&mu_);
  return !attrs_.empty() || (flushing_ != nullptr && !flushing_->attrs.empty());
}

bool FileCache::clean() {
  absl::MutexLock lock(&mu_);
  return flushing_ == nullptr && dirty_.empty() && attrs_.empty();
}

void FileCache::HoldWrites() {
  absl::MutexLock lock(&mu_);
  held_ = true;
}

void FileCache::AwaitWritesHeld() {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !held_ || !writing_; };
  mu_.Await(absl::Condition(&idle));
}

void FileCache::ReleaseWrites() {
  absl::MutexLock lock(&mu_);
  held_ = false;
}

void FileCache::Abandon(const absl::Status& why) {
  absl::MutexLock lock(&mu_);
  budget_->Add(-static_cast<int64_t>(dirty_.bytes()));
  dirty_ = objects::ExtentMap();
  attrs_ = AttrChanges();
  dirty_since_ = absl::InfiniteFuture();
  if (error_.ok()) error_ = why;
  abandoned_ = true;
  // A batch taken before (a background flush woken with the process) ends
  // under the old name, which the OSDs refuse; one started after the
  // object client's rename would not be.
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !writing_; };
  mu_.Await(absl::Condition(&idle));
}

void FileCache::SetWriteThrough(bool on, uint64_t seq) {
  absl::MutexLock lock(&mu_);
  if (seq == 0 || seq <= buffer_seq_) return;  // an older answer, crossed by a newer one
  buffer_seq_ = seq;
  write_through_ = on;
}

bool FileCache::write_through() {
  absl::MutexLock lock(&mu_);
  return write_through_;
}

void FileCache::DropReadahead() {
  absl::MutexLock lock(&mu_);
  chunks_.clear();
  window_ = 0;
  next_read_ = 0;
}

void FileCache::Truncated(uint64_t size) {
  absl::MutexLock lock(&mu_);
  const uint64_t before = dirty_.bytes();
  dirty_.TruncateAt(size);
  budget_->Add(static_cast<int64_t>(dirty_.bytes()) - static_cast<int64_t>(before));
  dirty_end_ = std::min(dirty_end_, size);
  written_end_ = size;
  chunks_.clear();
  window_ = 0;
}

// ---- reads

objects::ExtentMap FileCache::CaptureLocked(uint64_t offset, uint64_t length) {
  objects::ExtentMap out;
  if (flushing_ != nullptr) out = flushing_->extents.Slice(offset, length);
  const objects::ExtentMap dirty = dirty_.Slice(offset, length);  // not a temporary: range-for
  for (const auto& [at, bytes] : dirty.extents()) out.Insert(at, bytes);
  return out;
}

absl::StatusOr<std::string> FileCache::ReadThrough(uint64_t offset, uint64_t length) {
  objects::ExtentMap captured;
  objects::FileData data;
  {
    absl::MutexLock lock(&mu_);
    captured = CaptureLocked(offset, length);
    data = data_;
  }
  ASSIGN_OR_RETURN(std::string out, ReadBase(data, offset, length));
  captured.Overlay(offset, &out);
  return out;
}

void FileCache::DropChunksLocked(uint64_t offset, uint64_t length) {
  const uint64_t end = offset + length;
  for (auto it = chunks_.begin(); it != chunks_.end();) {
    const Chunk& c = *it->second;
    if (c.offset < end && offset < c.offset + c.length) {
      it = chunks_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<std::shared_ptr<FileCache::Chunk>> FileCache::ReadAheadLocked(uint64_t offset,
                                                                          uint64_t length,
                                                                          uint64_t size,
                                                                          Tasks* tasks) {
  const uint64_t chunk = options_.readahead_chunk_bytes;
  // FUSE hands the kernel's parallel reads to several threads: a stream's
  // reads arrive a little out of order, so once a stream is under way
  // "follows on" has slack. A new stream must start within one read of where
  // the last read ended: with the stream's slack (8 MiB) for everyone, one
  // 4 KiB random read in 16 over a 256 MiB file started an 8 MiB readahead
  // (600 KiB read from the OSDs per 4 KiB asked, 405 IOPS in fio).
  const uint64_t slack = window_ > 0 ? 2 * chunk : length;
  const bool sequential = offset + slack >= next_read_ && offset <= next_read_ + slack;
  if (!sequential) {
    window_ = 0;
    chunks_.clear();
    next_read_ = offset + length;
    return {};
  }
  if (window_ == 0) {
    window_ = options_.readahead_bytes;
  } else {
    window_ = std::min(options_.readahead_max_bytes, window_ + length);
  }
  next_read_ = std::max(next_read_, offset + length);
  // Chunks the reader has passed are dropped.
  while (!chunks_.empty()) {
    const Chunk& first = *chunks_.begin()->second;
    if (first.offset + first.length + slack > offset) break;
    chunks_.erase(chunks_.begin());
  }
  const uint64_t until = std::min(size, offset + length + window_);
  for (uint64_t at = offset / chunk * chunk; at < until; at += chunk) {
    if (chunks_.contains(at)) continue;
    auto c = std::make_shared<Chunk>();
    c->offset = at;
    c->length = std::min(chunk, size - at);
    c->data = data_;
    c->captured = CaptureLocked(c->offset, c->length);
    chunks_.emplace(at, c);
    tasks->push_back([self = shared_from_this(), c] { self->Fetch(*c); });
  }
  // The chunks holding [offset, offset + length), if they all exist.
  std::vector<std::shared_ptr<Chunk>> covering;
  uint64_t at = offset;
  const uint64_t end = offset + length;
  while (at < end) {
    auto it = chunks_.find(at / chunk * chunk);
    if (it == chunks_.end() || it->second->offset + it->second->length <= at) return {};
    covering.push_back(it->second);
    at = it->second->offset + it->second->length;
  }
  return covering;
}

void FileCache::Fetch(Chunk& c) {
  {
    absl::MutexLock lock(&c.mu);
    if (c.claimed) return;
    c.claimed = true;
  }
  // Nothing else touches data and captured once the chunk is claimed.
  absl::StatusOr<std::string> bytes = ReadBase(c.data, c.offset, c.length);
  if (bytes.ok()) c.captured.Overlay(c.offset, &*bytes);
  c.captured = objects::ExtentMap();
  absl::MutexLock lock(&c.mu);
  c.bytes = std::move(bytes);
  c.done = true;
}

absl::StatusOr<std::string> FileCache::Read(uint64_t offset, uint64_t length, uint64_t size,
                                            bool sequential_ok) {
  if (length == 0) return std::string();
  std::vector<std::shared_ptr<Chunk>> chunks;
  Tasks tasks;
  if (sequential_ok) {
    absl::MutexLock lock(&mu_);
    chunks = ReadAheadLocked(offset, length, std::max(size, offset + length), &tasks);
  }
  Submit(read_pool_, std::move(tasks));
  if (chunks.empty()) return ReadThrough(offset, length);
  std::string out(length, '\0');
  for (const auto& c : chunks) {
    Fetch(*c);  // what the reader waits for, unless a pool thread already has it
    absl::MutexLock lock(&c->mu);
    c->mu.Await(absl::Condition(&c->done));
    if (!c->bytes.ok()) return ReadThrough(offset, length);  // read ahead failed: try once more
    const uint64_t from = std::max(offset, c->offset);
    const uint64_t to = std::min(offset + length, c->offset + c->length);
    std::copy_n(c->bytes->data() + (from - c->offset), to - from, out.data() + (from - offset));
  }
  return out;
}

}  // namespace weft::client
