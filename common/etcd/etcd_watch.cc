// Watch: one etcd Watch stream per watch, driven by the watch's own thread.
//
// Resumption invariant: `next_revision` is one past the last revision whose
// events have all been delivered. etcd sends all events of one revision in one
// response (we do not ask for fragments), so re-creating the watcher at
// next_revision after a broken stream neither loses nor repeats an event.
#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/etcd/etcd_client.h"
#include "common/etcd/etcd_connection.h"
#include "common/log/log.h"

namespace weft::etcd {

struct Watch::State {
  std::shared_ptr<Connection> conn;
  std::string key;
  std::string range_end;
  std::function<void(const std::vector<WatchEvent>&)> on_events;
  std::function<void(const absl::Status&)> on_error;
  // Cancelled by ~Watch; aborts the stream in progress and any backoff sleep.
  Canceller canceller;
  // 0 until the first watcher is created when watching "from now".
  std::atomic<int64_t> next_revision{0};
};

namespace {

constexpr absl::Duration kMinBackoff = absl::Milliseconds(50);
constexpr absl::Duration kMaxBackoff = absl::Seconds(1);

struct StreamOutcome {
  enum Kind { kBroken, kFatal, kCancelled } kind = kBroken;
  absl::Status status;      // Why, for kBroken and kFatal.
  bool progressed = false;  // A watcher was created: the endpoint works.
};

using WatchStream =
    grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>;

std::string Describe(const Watch::State& s) {
  return absl::StrCat("etcd watch key=", PrintableKey(s.key),
                      " range_end=", PrintableKey(s.range_end));
}

// Errors after which reconnecting may help (etcd restarting, leader change,
// network). The rest (bad request, permissions) would fail again.
bool Retryable(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::OK:  // Server closed the stream without an error.
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNAVAILABLE:
      return true;
    default:
      return false;
  }
}

std::vector<WatchEvent> ConvertEvents(const etcdserverpb::WatchResponse& response,
                                      int64_t next_revision) {
  std::vector<WatchEvent> events;
  events.reserve(response.events_size());
  for (const mvccpb::Event& e : response.events()) {
    // Never expected; keeps the no-repeat promise even if etcd resent a revision.
    if (e.kv().mod_revision() < next_revision) continue;
    WatchEvent event;
    event.type = e.type() == mvccpb::Event::DELETE ? WatchEvent::kDelete : WatchEvent::kPut;
    const mvccpb::KeyValue& kv = e.kv();
    event.kv.key = kv.key();
    event.kv.value = kv.value();
    event.kv.create_revision = kv.create_revision();
    event.kv.mod_revision = kv.mod_revision();
    event.kv.version = kv.version();
    event.kv.lease = kv.lease();
    events.push_back(std::move(event));
  }
  return events;
}

// Reads responses until the stream breaks, etcd cancels the watcher, or we are
// cancelled; delivers events as they come.
StreamOutcome ReadEvents(Watch::State& s, WatchStream& stream) {
  StreamOutcome out;
  etcdserverpb::WatchResponse response;
  while (stream.Read(&response)) {
    const int64_t next = s.next_revision.load();
    if (response.canceled()) {
      out.kind = StreamOutcome::kFatal;
      if (response.compact_revision() > 0) {
        out.status = absl::OutOfRangeError(absl::StrCat(
            Describe(s), ": revision ", next, " was compacted (compact_revision=",
            response.compact_revision(), "); re-read and watch again"));
      } else {
        out.status = absl::FailedPreconditionError(
            absl::StrCat(Describe(s), ": cancelled by etcd: ", response.cancel_reason()));
      }
      return out;
    }
    if (response.created()) {
      out.progressed = true;
      // Watching "from now": events after the creation revision follow.
      if (next == 0) s.next_revision.store(response.header().revision() + 1);
      continue;
    }
    if (response.events_size() == 0) {
      // Progress notification: no event at or below header.revision is pending.
      if (next > 0 && response.header().revision() + 1 > next) {
        s.next_revision.store(response.header().revision() + 1);
      }
      continue;
    }
    std::vector<WatchEvent> events = ConvertEvents(response, next);
    if (events.empty()) continue;
    if (s.canceller.cancelled()) {
      out.kind = StreamOutcome::kCancelled;
      return out;
    }
    s.on_events(events);
    s.next_revision.store(events.back().kv.mod_revision + 1);
  }
  return out;  // kBroken: the caller reads the status from Finish().
}

// Opens one stream on endpoint `index`, creates the watcher at next_revision
// and reads it until it ends.
StreamOutcome RunStream(Watch::State& s, size_t index) {
  Endpoint& ep = s.conn->endpoint(index);
  grpc::ClientContext ctx;
  if (!s.canceller.Register(&ctx)) return {StreamOutcome::kCancelled, absl::OkStatus(), false};
  std::unique_ptr<WatchStream> stream = ep.watch->Watch(&ctx);
  etcdserverpb::WatchRequest request;
  etcdserverpb::WatchCreateRequest* create = request.mutable_create_request();
  create->set_key(s.key);
  create->set_range_end(s.range_end);
  create->set_start_revision(s.next_revision.load());
  // Periodic progress keeps next_revision recent on a quiet range, so that a
  // resume after a long quiet spell does not hit a compacted revision.
  create->set_progress_notify(true);
  StreamOutcome out;
  if (stream->Write(request)) out = ReadEvents(s, *stream);
  if (out.kind != StreamOutcome::kBroken) ctx.TryCancel();  // We leave a live stream.
  grpc::Status status = stream->Finish();
  s.canceller.Unregister();
  if (out.kind == StreamOutcome::kBroken) {
    out.status = FromGrpc(status, absl::StrCat(Describe(s), " at ", ep.address));
    if (s.canceller.cancelled()) {
      out.kind = StreamOutcome::kCancelled;
    } else if (!Retryable(status)) {
      out.kind = StreamOutcome::kFatal;
    }
  }
  return out;
}

void RunWatch(std::shared_ptr<Watch::State> s) {
  absl::Duration backoff = kMinBackoff;
  while (!s->canceller.cancelled()) {
    const size_t index = s->conn->Current();
    StreamOutcome out = RunStream(*s, index);
    switch (out.kind) {
      case StreamOutcome::kCancelled:
        return;
      case StreamOutcome::kFatal:
        LOG(WARNING) << "etcd watch failed key=" << PrintableKey(s->key)
                     << " next_revision=" << s->next_revision.load() << " error=\""
                     << out.status.message() << "\"";
        if (!s->canceller.cancelled()) s->on_error(out.status);
        return;
      case StreamOutcome::kBroken:
        break;
    }
    if (out.progressed) backoff = kMinBackoff;
    s->conn->Rotate(index);
    LOG(WARNING) << "etcd watch stream lost, resuming key=" << PrintableKey(s->key)
                 << " next_revision=" << s->next_revision.load() << " backoff=" << backoff
                 << " error=\"" << out.status.message() << "\"";
    if (s->canceller.SleepFor(backoff)) return;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

}  // namespace

Watch::Watch(std::shared_ptr<State> state, std::thread thread)
    : state_(std::move(state)), thread_(std::move(thread)) {}

Watch::~Watch() {
  state_->canceller.Cancel();
  // From inside a callback the thread cannot join itself; it holds its own
  // reference to the state and exits once the callback returns.
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

int64_t Watch::next_revision() const { return state_->next_revision.load(); }

std::unique_ptr<Watch> Client::WatchRange(
    absl::string_view key, absl::string_view range_end, int64_t start_revision,
    std::function<void(const std::vector<WatchEvent>&)> on_events,
    std::function<void(const absl::Status&)> on_error) {
  auto state = std::make_shared<Watch::State>();
  state->conn = conn_;
  state->key = std::string(key);
  state->range_end = std::string(range_end);
  state->on_events = std::move(on_events);
  state->on_error = std::move(on_error);
  state->next_revision.store(start_revision > 0 ? start_revision : 0);
  std::thread thread(RunWatch, state);
  return std::make_unique<Watch>(std::move(state), std::move(thread));
}

}  // namespace weft::etcd
