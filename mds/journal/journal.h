// The rank's journal: events appended to a sequence of segment objects in the
// metadata pool, group-committed by one writer thread.
//
// The caller assigns sequence numbers (under its own lock, in the order it
// applied the events to its cache) and Enqueue()s the event, which is
// encoded here (mds/journal/event.h: EventRecord, EventOf at replay). One
// writer thread takes every queued event as one batch and writes it at the
// end of the current segment; then they are durable. When every reply went
// out early (unsafe), the writer lets events gather for up to batch_wait_ms
// first; a WaitDurable() caller (fsync, a safe reply) ends the wait at once. One batch at a time on
// purpose: the OSD applies writes to one object one at a time, so batches in
// flight together only queue there and lose their batching (measured: 221
// creates/s with 4 writers against 590-800 with one). After a crash, replay
// stops at the first torn or missing frame: nothing after it was
// acknowledged. WaitDurable(seq) returns once seq is durable.
// After a failed append the journal is broken for good (sticky error, like
// LevelDB after a failed fsync): the rank must stop and be replayed.
//
// Trim(seq) records in the head object that every event <= seq is in the
// backing objects and deletes the segments that hold only such events.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "mds/journal/event.h"
#include "mds/store/meta_store.h"

namespace weft::mds {

struct JournalOptions {
  uint32_t segment_bytes = 4 << 20;
  uint32_t max_batch_bytes = 8 << 20;
  int64_t write_delay_ms = 0;  // tests: each write waits this long first (unsafe replies pile up)
  // How long the oldest queued event may wait for others to share its write
  // while nobody waits for durability (replies went out unsafe). Fewer,
  // larger journal writes leave the OSDs' CPU to the requests themselves.
  int64_t batch_wait_ms = 0;
  // A writer thread of its own (Start); without, nothing is written until a
  // caller of WriteOnce() or WaitDurable() writes it (the simulation decides
  // when the journal reaches the store).
  bool writer_thread = true;
};

class Journal {
 public:
  Journal(MetaStore* store, JournalOptions options);
  ~Journal();

  // Reads the head and every live segment; calls `apply` for each event after
  // the trim point, in order. Leaves the journal ready to append after them
  // (in a new segment). Returns the last sequence number seen.
  // An event that does not parse, or breaks Event's contract (EventOf),
  // stops replay with DataLoss.
  absl::StatusOr<uint64_t> Replay(const std::function<absl::Status(Event&)>& apply);
  // Creates an empty journal (new filesystem).
  absl::Status Create();

  // Standby-replay (docs/ARCHITECTURE.md, "Standby-replay"): following the
  // journal while another daemon appends to it, without writing anything.
  // BeginTail reads the head: events after its trim point are the ones to
  // follow (the caller loads the tables after it, so they are at least as
  // new). Each Tail call applies the events appended since the last one, in
  // order, and stops at the end of what is written. A later Replay goes on
  // from there, so a takeover replays only what was appended after the last
  // Tail. FailedPrecondition ("fell behind") when events it still needed
  // were trimmed away, or a sequence number is missing: the caller starts
  // over with a fresh rank. Returns the last sequence applied.
  absl::Status BeginTail();
  absl::StatusOr<uint64_t> Tail(const std::function<absl::Status(Event&)>& apply);

  void Start();
  void Stop();

  // Encodes and queues an event; its seq must be above every one queued
  // before.
  void Enqueue(const Event& event);
  // Returns once `seq` is durable, or the journal's sticky error. Without a
  // writer thread it writes what is queued itself.
  absl::Status WaitDurable(uint64_t seq);
  // Writes one batch of what is queued, if anything (false: nothing was).
  // Without a writer thread only; one caller at a time.
  bool WriteOnce();
  uint64_t durable_seq();
  // The sticky error of a failed write (OK while healthy).
  absl::Status error();

  // Every event <= seq is flushed to the backing objects.
  absl::Status Trim(uint64_t seq);

  struct Stats {
    uint64_t first_seq = 0, last_seq = 0, bytes = 0, segments = 0;
  };
  Stats stats();

 private:
  struct Segment {
    uint64_t number = 0;
    uint64_t last_seq = 0;
    uint64_t bytes = 0;
  };
  struct Batch {
    std::string bytes;  // frames
    uint64_t last = 0;  // the last seq in it
    uint64_t segment = 0, offset = 0;
  };
  // How reading a run of frames ended.
  enum class FramesEnd { kAll, kTorn, kGap };
  // Applies the events in `bytes` (frames of `segment` from a frame
  // boundary) that follow *last_seq, in order; *valid: the bytes of whole
  // frames read.
  absl::StatusOr<FramesEnd> ApplyFrames(const std::string& bytes, uint64_t segment, size_t* valid,
                                        uint64_t* last_seq,
                                        const std::function<absl::Status(Event&)>& apply);
  static absl::Status FellBehind(const std::string& why);
  void WriterLoop();
  // The next batch off the queue, and where it goes.
  void TakeBatchLocked(Batch* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes it (without mu_) and records the result.
  void WriteBatch(const Batch& batch);
  // Declares the events up to `last` durable and keeps the statistics.
  void RecordWriteLocked(uint64_t last, absl::Duration took, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RemoveSegmentsFrom(uint64_t segment);

  MetaStore* const store_;
  const JournalOptions options_;

  absl::Mutex mu_;
  std::deque<std::pair<uint64_t, std::string>> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time oldest_queued_ ABSL_GUARDED_BY(mu_);  // when queue_ last became non-empty
  int waiters_ ABSL_GUARDED_BY(mu_) = 0;           // in WaitDurable for a seq not yet durable
  uint64_t durable_seq_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t last_queued_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t trimmed_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Segment> segments_ ABSL_GUARDED_BY(mu_);  // live ones, oldest first
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // Write statistics, logged every 10 s while the journal is busy.
  uint64_t stat_appends_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t stat_events_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t stat_append_us_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t stat_since_ms_ ABSL_GUARDED_BY(mu_) = 0;

  // Where Tail stopped (touched only by the caller of BeginTail, Tail and
  // Replay, one thread at a time).
  struct TailState {
    bool begun = false;
    uint64_t segment = 0, offset = 0, last_seq = 0;
    std::deque<Segment> passed;  // whole segments read, oldest first
  };
  TailState tail_;

  absl::Mutex trim_mu_;  // one Trim at a time
  std::thread writer_;
};

}  // namespace weft::mds
