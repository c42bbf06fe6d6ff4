#include "mds/journal/journal.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/fault/fault.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "mds/journal/journal_format.h"

namespace weft::mds {

Journal::Journal(MetaStore* store, JournalOptions options) : store_(store), options_(options) {}

Journal::~Journal() { Stop(); }

absl::Status Journal::Create() {
  pb::JournalHead head;
  head.set_trimmed_seq(0);
  head.set_first_segment(0);
  head.set_segment_bytes(options_.segment_bytes);
  RETURN_IF_ERROR(store_->WriteHead(head));
  absl::MutexLock lock(&mu_);
  segments_.clear();
  segments_.push_back(Segment{0, 0, 0});
  return absl::OkStatus();
}

absl::StatusOr<Journal::FramesEnd> Journal::ApplyFrames(
    const std::string& bytes, uint64_t segment, size_t* valid, uint64_t* last_seq,
    const std::function<absl::Status(Event&)>& apply) {
  *valid = 0;
  std::vector<std::string> frames = ParseFrames(bytes, valid);
  for (std::string& frame : frames) {
    pb::JournalEvent record;
    if (!record.ParseFromString(frame)) {
      return absl::DataLossError(absl::StrCat("journal segment ", segment, ": bad event"));
    }
    if (record.seq() <= *last_seq) continue;
    if (record.seq() != *last_seq + 1) {
      LOG(WARNING) << "event=journal_end_at_gap segment=" << segment << " seq=" << record.seq()
                   << " after=" << *last_seq;
      return FramesEnd::kGap;
    }
    absl::StatusOr<Event> event = EventOf(record);
    if (!event.ok()) return Annotate(event.status(), absl::StrCat("journal segment ", segment));
    RETURN_IF_ERROR(apply(*event));
    *last_seq = record.seq();
  }
  return *valid == bytes.size() ? FramesEnd::kAll : FramesEnd::kTorn;
}

absl::Status Journal::FellBehind(const std::string& why) {
  return absl::FailedPreconditionError(absl::StrCat("fell behind the journal: ", why));
}

absl::StatusOr<uint64_t> Journal::Replay(
    const std::function<absl::Status(Event&)>& apply) {
  ASSIGN_OR_RETURN(auto head, store_->ReadHead());
  if (!head.has_value()) return absl::DataLossError("the journal head object is missing");
  uint64_t last_seq = head->trimmed_seq();
  uint64_t segment = head->first_segment();
  uint64_t offset = 0;
  std::deque<Segment> live;
  if (tail_.begun) {
    // Standby-replay: on from where Tail stopped.
    if (head->first_segment() > tail_.segment) {
      return FellBehind(absl::StrCat("segment ", tail_.segment, " was trimmed"));
    }
    last_seq = tail_.last_seq;
    segment = tail_.segment;
    offset = tail_.offset;
    for (const Segment& s : tail_.passed) {
      if (s.number >= head->first_segment()) live.push_back(s);
    }
  }
  bool ended = false;  // a hole or torn write: nothing after it was acknowledged
  for (; !ended; ++segment, offset = 0) {
    auto bytes = store_->ReadSegmentFrom(segment, offset);
    if (absl::IsNotFound(bytes.status())) break;
    if (!bytes.ok()) return Annotate(bytes.status(), absl::StrCat("journal segment ", segment));
    size_t valid = 0;
    ASSIGN_OR_RETURN(FramesEnd end, ApplyFrames(*bytes, segment, &valid, &last_seq, apply));
    if (end != FramesEnd::kAll) {
      LOG(WARNING) << "event=journal_end_in_segment segment=" << segment
                   << " valid=" << offset + valid << " size=" << offset + bytes->size();
      ended = true;
    }
    live.push_back(Segment{segment, last_seq, offset + bytes->size()});
  }
  // Writes continue in a fresh segment; later ones (written after the hole,
  // never acknowledged) must not be read again.
  if (ended) RETURN_IF_ERROR(RemoveSegmentsFrom(segment));
  tail_ = TailState{};
  absl::MutexLock lock(&mu_);
  durable_seq_ = last_seq;
  last_queued_ = last_seq;
  trimmed_seq_ = head->trimmed_seq();
  segments_ = std::move(live);
  segments_.push_back(Segment{segment, last_seq, 0});
  return last_seq;
}

absl::Status Journal::BeginTail() {
  ASSIGN_OR_RETURN(auto head, store_->ReadHead());
  if (!head.has_value()) return absl::DataLossError("the journal head object is missing");
  tail_ = TailState{};
  tail_.begun = true;
  tail_.segment = head->first_segment();
  tail_.last_seq = head->trimmed_seq();
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Journal::Tail(const std::function<absl::Status(Event&)>& apply) {
  if (!tail_.begun) return absl::FailedPreconditionError("Tail before BeginTail");
  ASSIGN_OR_RETURN(auto head, store_->ReadHead());
  if (!head.has_value()) return absl::DataLossError("the journal head object is missing");
  if (head->first_segment() > tail_.segment) {
    return FellBehind(absl::StrCat("segment ", tail_.segment, " was trimmed"));
  }
  while (!tail_.passed.empty() && tail_.passed.front().number < head->first_segment()) {
    tail_.passed.pop_front();
  }
  // Reads on in the segment; once the writer has begun the next one, this
  // one is whole (what was appended between the read and that check is
  // read again first; a torn end is a crash's, never acknowledged).
  bool final_read = false;
  for (;;) {
    auto bytes = store_->ReadSegmentFrom(tail_.segment, tail_.offset);
    if (absl::IsNotFound(bytes.status())) {
      if (tail_.offset == 0 && !final_read) return tail_.last_seq;  // not begun yet
      return FellBehind(absl::StrCat("segment ", tail_.segment, " was trimmed"));
    }
    if (!bytes.ok()) return Annotate(bytes.status(), absl::StrCat("journal segment ", tail_.segment));
    size_t valid = 0;
    ASSIGN_OR_RETURN(FramesEnd end,
                     ApplyFrames(*bytes, tail_.segment, &valid, &tail_.last_seq, apply));
    if (end == FramesEnd::kGap) {
      return FellBehind(absl::StrCat("a sequence number is missing after ", tail_.last_seq));
    }
    tail_.offset += valid;
    if (final_read) {
      tail_.passed.push_back(Segment{tail_.segment, tail_.last_seq, tail_.offset});
      ++tail_.segment;
      tail_.offset = 0;
      final_read = false;
      continue;
    }
    ASSIGN_OR_RETURN(bool next, store_->SegmentExists(tail_.segment + 1));
    if (!next) return tail_.last_seq;
    final_read = true;
  }
}

absl::Status Journal::RemoveSegmentsFrom(uint64_t segment) {
  for (;; ++segment) {
    auto bytes = store_->ReadSegment(segment);
    if (absl::IsNotFound(bytes.status())) return absl::OkStatus();
    RETURN_IF_ERROR(bytes.status());
    LOG(WARNING) << "event=journal_segment_discarded segment=" << segment;
    RETURN_IF_ERROR(store_->RemoveSegment(segment));
  }
}

void Journal::Start() {
  if (options_.writer_thread) writer_ = std::thread([this] { WriterLoop(); });
}

void Journal::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (writer_.joinable()) writer_.join();
}

void Journal::Enqueue(const Event& event) {
  const uint64_t seq = event.seq;
  std::string event_bytes = EventRecord(event).SerializeAsString();
  absl::MutexLock lock(&mu_);
  CHECK(seq > last_queued_) << "journal seq " << seq << " queued after " << last_queued_;
  last_queued_ = seq;
  if (queue_.empty()) oldest_queued_ = absl::Now();
  queued_bytes_ += event_bytes.size();
  queue_.emplace_back(seq, std::move(event_bytes));
}

absl::Status Journal::WaitDurable(uint64_t seq) {
  if (!options_.writer_thread) {
    // Nobody else writes: this caller writes what is queued itself.
    for (;;) {
      {
        absl::MutexLock lock(&mu_);
        if (durable_seq_ >= seq) return absl::OkStatus();
        if (!error_.ok()) return error_;
        if (stopping_) return absl::UnavailableError("the MDS is stopping");
      }
      if (!WriteOnce()) break;
    }
    absl::MutexLock lock(&mu_);
    if (durable_seq_ >= seq) return absl::OkStatus();
    if (!error_.ok()) return error_;
    return absl::InternalError(absl::StrCat("journal: seq ", seq, " was never queued"));
  }
  absl::MutexLock lock(&mu_);
  auto done = [this, seq]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return durable_seq_ >= seq || !error_.ok() || stopping_;
  };
  if (!done()) {
    ++waiters_;
    mu_.Await(absl::Condition(&done));
    --waiters_;
  }
  if (durable_seq_ >= seq) return absl::OkStatus();
  if (!error_.ok()) return error_;
  return absl::UnavailableError("the MDS is stopping");
}

absl::Status Journal::error() {
  absl::MutexLock lock(&mu_);
  return error_;
}

uint64_t Journal::durable_seq() {
  absl::MutexLock lock(&mu_);
  return durable_seq_;
}

void Journal::WriterLoop() {
  for (;;) {
    Batch batch;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_;
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty() || !error_.ok()) {
        if (stopping_) return;
        queue_.clear();
        queued_bytes_ = 0;
        continue;
      }
      if (options_.batch_wait_ms > 0) {
        auto write_now = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return waiters_ > 0 || stopping_ || queued_bytes_ >= options_.max_batch_bytes;
        };
        mu_.AwaitWithDeadline(absl::Condition(&write_now),
                              oldest_queued_ + absl::Milliseconds(options_.batch_wait_ms));
      }
      TakeBatchLocked(&batch);
    }
    WriteBatch(batch);
  }
}

bool Journal::WriteOnce() {
  Batch batch;
  {
    absl::MutexLock lock(&mu_);
    if (queue_.empty()) return false;
    if (!error_.ok()) {  // broken for good: what is queued never lands
      queue_.clear();
      queued_bytes_ = 0;
      return false;
    }
    TakeBatchLocked(&batch);
  }
  WriteBatch(batch);
  return true;
}

void Journal::TakeBatchLocked(Batch* batch) {
  DCHECK(!queue_.empty());
  while (!queue_.empty() && batch->bytes.size() < options_.max_batch_bytes) {
    // Sequence numbers are assigned in the order of application and only grow.
    CHECK(queue_.front().first > batch->last) << "journal seq " << queue_.front().first
                                              << " queued after " << batch->last;
    AppendFrame(queue_.front().second, &batch->bytes);
    queued_bytes_ -= queue_.front().second.size();
    batch->last = queue_.front().first;
    queue_.pop_front();
  }
  if (!queue_.empty()) oldest_queued_ = absl::InfinitePast();  // left over: no second wait
  const Segment& current = segments_.back();
  if (current.bytes > 0 && current.bytes + batch->bytes.size() > options_.segment_bytes) {
    segments_.push_back(Segment{current.number + 1, current.last_seq, 0});
  }
  batch->segment = segments_.back().number;
  batch->offset = segments_.back().bytes;
}

void Journal::WriteBatch(const Batch& batch) {
  if (options_.write_delay_ms > 0) absl::SleepFor(absl::Milliseconds(options_.write_delay_ms));
  const absl::Time started = absl::Now();
  absl::Status status =
      fault::Fire(fault::kMdsJournalWriteError)
          ? absl::UnavailableError("fault point mds.journal_write_error")
          : store_->WriteSegment(batch.segment, batch.offset, batch.bytes);
  const absl::Time ended = absl::Now();
  absl::MutexLock lock(&mu_);
  if (!status.ok()) {
    LOG(ERROR) << "event=journal_write_failed segment=" << batch.segment << " status=\"" << status
               << "\"";
    error_ = status;
    return;
  }
  Segment& written = segments_.back();
  // One batch at a time, each after the last: the journal only grows.
  CHECK(written.number == batch.segment && written.bytes == batch.offset)
      << "journal segment " << written.number << " at " << written.bytes << ", batch for "
      << batch.segment << " at " << batch.offset;
  CHECK(batch.last > durable_seq_) << "journal durable seq " << durable_seq_ << " would go to "
                                   << batch.last;
  written.bytes += batch.bytes.size();
  written.last_seq = batch.last;
  RecordWriteLocked(batch.last, ended - started, ended);
}

void Journal::RecordWriteLocked(uint64_t last, absl::Duration took, absl::Time now) {
  ++stat_appends_;
  stat_events_ += last - durable_seq_;
  stat_append_us_ += absl::ToInt64Microseconds(took);
  durable_seq_ = last;
  const int64_t now_ms = absl::ToUnixMillis(now);
  if (stat_since_ms_ == 0) stat_since_ms_ = now_ms;
  if (now_ms - stat_since_ms_ >= 10000) {
    LOG(INFO) << "event=journal_stats writes=" << stat_appends_ << " events=" << stat_events_
              << " avg_write_us=" << stat_append_us_ / std::max<uint64_t>(1, stat_appends_);
    stat_appends_ = stat_events_ = 0;
    stat_append_us_ = 0;
    stat_since_ms_ = now_ms;
  }
}

absl::Status Journal::Trim(uint64_t seq) {
  absl::MutexLock trim(&trim_mu_);
  pb::JournalHead head;
  std::vector<uint64_t> doomed;
  {
    absl::MutexLock lock(&mu_);
    if (seq <= trimmed_seq_) return absl::OkStatus();
    // Segments entirely <= seq go, but never the one being appended to.
    while (segments_.size() > 1 && segments_.front().last_seq <= seq) {
      doomed.push_back(segments_.front().number);
      segments_.pop_front();
    }
    head.set_trimmed_seq(seq);
    head.set_first_segment(segments_.front().number);
    head.set_segment_bytes(options_.segment_bytes);
  }
  RETURN_IF_ERROR(store_->WriteHead(head));
  {
    absl::MutexLock lock(&mu_);
    trimmed_seq_ = seq;
  }
  for (uint64_t s : doomed) {
    auto st = store_->RemoveSegment(s);
    if (!st.ok()) LOG(WARNING) << "event=journal_segment_remove_failed segment=" << s;
  }
  return absl::OkStatus();
}

Journal::Stats Journal::stats() {
  absl::MutexLock lock(&mu_);
  Stats s;
  s.first_seq = trimmed_seq_ + 1;
  s.last_seq = durable_seq_;
  s.segments = segments_.size();
  for (const Segment& seg : segments_) s.bytes += seg.bytes;
  return s;
}

}  // namespace weft::mds
