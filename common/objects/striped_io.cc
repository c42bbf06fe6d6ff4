#include "common/objects/striped_io.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <optional>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/fs/attr_wire.h"
#include "common/status/status.h"
#include "common/objects/data_objects.h"

namespace weft::objects {

absl::StatusOr<FileData> FileDataOf(uint64_t ino, const pb::FileLayout& layout) {
  return FileDataOf(ino, fs::StripeOf(layout), PoolId(layout.pool()));
}

absl::StatusOr<FileData> FileDataOf(uint64_t ino, const striping::Layout& layout, PoolId pool) {
  FileData d;
  d.ino = ino;
  d.layout = layout;
  d.pool = pool;
  absl::Status valid = d.layout.Validate();
  if (!valid.ok()) {
    return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL,
                      absl::StrCat("inode ", ino, ": ", valid.message()));
  }
  return d;
}

void StripedIo::Acquire(uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  // One request larger than the whole budget runs alone rather than never.
  auto fits = [this, bytes]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return inflight_bytes_ == 0 || inflight_bytes_ + bytes <= inflight_bytes_max_;
  };
  mu_.Await(absl::Condition(&fits));
  inflight_bytes_ += bytes;
}

void StripedIo::ReleaseBudget(uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  inflight_bytes_ -= bytes;
}

absl::Status StripedIo::RunParallel(
    std::vector<std::pair<uint64_t, std::function<absl::Status()>>> jobs) {
  if (jobs.size() == 1 || threads_max_ <= 1) {
    // On the caller's thread, one after the other (the first error ends it).
    for (auto& [bytes, job] : jobs) {
      Acquire(bytes);
      absl::Status s = job();
      ReleaseBudget(bytes);
      RETURN_IF_ERROR(s);
    }
    return absl::OkStatus();
  }
  // At most threads_max_ objects at a time, and within the byte budget.
  std::vector<absl::Status> results(jobs.size());
  for (size_t start = 0; start < jobs.size(); start += threads_max_) {
    const size_t end = std::min(jobs.size(), start + threads_max_);
    std::vector<std::thread> threads;
    threads.reserve(end - start);
    for (size_t i = start; i < end; ++i) {
      Acquire(jobs[i].first);  // blocks here, before starting more, when over budget
      threads.emplace_back([this, &jobs, &results, i] {
        results[i] = jobs[i].second();
        ReleaseBudget(jobs[i].first);
      });
    }
    for (auto& t : threads) t.join();
  }
  for (const auto& s : results) RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

absl::StatusOr<std::string> StripedIo::Read(const FileData& file, uint64_t offset,
                                            uint64_t length) {
  std::string out(length, '\0');
  auto extents = striping::FileRangeToObjects(file.layout, offset, length);
  std::vector<std::pair<uint64_t, std::function<absl::Status()>>> jobs;
  for (const auto& e : extents) {
    jobs.emplace_back(e.length, [this, &file, &e, &out]() -> absl::Status {
      ObjectOperation op;
      op.Read(e.offset, e.length);
      auto r = objects_->Execute(file.pool, striping::DataObjectName(file.ino, e.objno), op);
      if (!r.ok()) {
        if (absl::IsNotFound(r.status())) return absl::OkStatus();  // a hole: zeros
        return Annotate(r.status(), "read data object");
      }
      const ByteChain& data = r->items.at(0).data;
      uint64_t obj_pos = 0;  // scatter the object's bytes; a short object leaves zeros
      for (const auto& piece : e.pieces) {
        data.CopyTo(obj_pos, piece.length, out.data() + piece.buffer_offset);
        obj_pos += piece.length;
      }
      return absl::OkStatus();
    });
  }
  RETURN_IF_ERROR(RunParallel(std::move(jobs)));
  return out;
}

absl::Status StripedIo::Write(const FileData& file, uint64_t offset, absl::string_view data) {
  return WriteRanges(file, {{offset, data}}, nullptr);
}

absl::Status StripedIo::WriteExtents(const FileData& file, const ExtentMap& extents,
                                     int64_t* allocated_delta) {
  std::vector<std::pair<uint64_t, absl::string_view>> ranges;
  ranges.reserve(extents.extents().size());
  for (const auto& [offset, bytes] : extents.extents()) ranges.emplace_back(offset, bytes);
  return WriteRanges(file, ranges, allocated_delta);
}

absl::Status StripedIo::WriteRanges(
    const FileData& file, const std::vector<std::pair<uint64_t, absl::string_view>>& ranges,
    int64_t* allocated_delta) {
  // Every piece of every range, grouped by object, pieces that touch in the
  // object joined (a sequential writer's touching extents become one write),
  // each copied once into a buffer of its final size: one request per object
  // (per kMaxWritesPerRequest writes), all objects in parallel.
  struct Write {
    uint64_t object_offset;
    uint64_t length;
    std::vector<absl::string_view> parts;
  };
  std::map<uint64_t, std::vector<Write>> by_object;
  for (const auto& [offset, data] : ranges) {
    for (const auto& e : striping::FileRangeToObjects(file.layout, offset, data.size())) {
      std::vector<Write>& writes = by_object[e.objno];
      if (writes.empty() || writes.back().object_offset + writes.back().length != e.offset) {
        writes.push_back(Write{e.offset, 0, {}});
      }
      writes.back().length += e.length;
      for (const auto& piece : e.pieces) {
        writes.back().parts.push_back(data.substr(piece.buffer_offset, piece.length));
      }
    }
  }
  std::atomic<int64_t> grown{0};
  std::vector<std::pair<uint64_t, std::function<absl::Status()>>> jobs;
  for (const auto& [objno, writes] : by_object) {
    for (size_t first = 0; first < writes.size(); first += kMaxWritesPerRequest) {
      const size_t last = std::min(writes.size(), first + kMaxWritesPerRequest);
      ObjectOperation op;
      uint64_t bytes = 0;
      for (size_t i = first; i < last; ++i) {
        std::string joined;
        joined.reserve(writes[i].length);
        for (absl::string_view part : writes[i].parts) joined.append(part.data(), part.size());
        bytes += joined.size();
        op.Write(writes[i].object_offset, std::move(joined));
      }
      // Run once: the request takes the data.
      jobs.emplace_back(bytes, [this, &file, &grown, objno = objno,
                                op = std::move(op)]() mutable -> absl::Status {
        auto r = objects_->Execute(file.pool, striping::DataObjectName(file.ino, objno),
                                   std::move(op));
        if (!r.ok()) return Annotate(r.status(), "write data object");
        grown += r->SizeChange();
        return absl::OkStatus();
      });
    }
  }
  absl::Status status = RunParallel(std::move(jobs));
  if (allocated_delta != nullptr) *allocated_delta += grown.load();
  return status;
}

absl::StatusOr<int64_t> StripedIo::CutObject(const FileData& file, uint64_t objno,
                                              uint64_t keep_bytes) {
  ObjectOperation op;
  if (keep_bytes == 0) {
    op.Remove();
  } else {
    op.Truncate(keep_bytes);
  }
  auto r = objects_->Execute(file.pool, striping::DataObjectName(file.ino, objno), op);
  if (absl::IsNotFound(r.status())) return 0;  // a hole already
  if (!r.ok()) return Annotate(r.status(), keep_bytes == 0 ? "remove data object"
                                                           : "truncate data object");
  return r->SizeChange();
}

absl::Status StripedIo::Trim(const FileData& file, uint64_t old_size, uint64_t new_size) {
  const auto [first, last] = striping::TruncateRange(file.layout, old_size, new_size);
  ASSIGN_OR_RETURN(std::vector<uint64_t> candidates,
                   DataObjectsIn(objects_, file.pool, file.ino, first, last));
  std::vector<std::pair<uint64_t, std::function<absl::Status()>>> jobs;
  for (uint64_t objno : candidates) {
    const std::optional<striping::ObjectTrim> t =
        striping::TrimOf(file.layout, objno, old_size, new_size);
    if (!t) continue;
    jobs.emplace_back(1, [this, &file, t = *t] {
      return CutObject(file, t.objno, t.keep_bytes).status();
    });
  }
  return RunParallel(std::move(jobs));
}

absl::StatusOr<std::pair<uint64_t, uint64_t>> StripedIo::RemoveWholeSets(
    const FileData& file, uint64_t offset, uint64_t end, int64_t* allocated_delta) {
  const uint64_t set = file.layout.set_bytes();
  if (set == 0 || end <= offset) return std::make_pair(offset, offset);
  const uint64_t first = offset / set + (offset % set != 0 ? 1 : 0);  // whole sets only
  const uint64_t last = end / set;
  if (first >= last) return std::make_pair(offset, offset);
  ASSIGN_OR_RETURN(std::vector<uint64_t> candidates,
                   DataObjectsIn(objects_, file.pool, file.ino, first * file.layout.stripe_count,
                                 last * file.layout.stripe_count));
  std::atomic<int64_t> shrunk{0};
  std::vector<std::pair<uint64_t, std::function<absl::Status()>>> jobs;
  for (uint64_t objno : candidates) {
    jobs.emplace_back(1, [this, &file, &shrunk, objno]() -> absl::Status {
      ASSIGN_OR_RETURN(int64_t change, CutObject(file, objno, 0));
      shrunk += change;
      return absl::OkStatus();
    });
  }
  absl::Status status = RunParallel(std::move(jobs));
  if (allocated_delta != nullptr) *allocated_delta += shrunk.load();
  RETURN_IF_ERROR(status);
  return std::make_pair(first * set, last * set);
}

absl::StatusOr<uint64_t> StripedIo::Seek(const FileData& file, uint64_t size, uint64_t offset,
                                          bool hole, size_t max_objects) {
  const uint64_t unit = file.layout.stripe_unit;
  if (unit == 0) return absl::InvalidArgumentError("file has no valid layout");
  absl::flat_hash_map<uint64_t, uint64_t> ends;  // objno -> object size (0: none)
  // One stripe unit at a time: within it, [pos, data_end) is data and
  // [data_end, unit_end) a hole.
  for (uint64_t pos = offset; pos < size;) {
    const striping::ObjectPos at = striping::FileToObject(file.layout, pos);
    const uint64_t unit_end = std::min(size, (pos / unit + 1) * unit);
    auto it = ends.find(at.objno);
    if (it == ends.end()) {
      if (ends.size() >= max_objects) return hole ? size : pos;  // the rest counts as data
      absl::StatusOr<ObjectStat> st =
          objects_->Stat(file.pool, striping::DataObjectName(file.ino, at.objno));
      if (!st.ok() && !absl::IsNotFound(st.status())) {
        return Annotate(st.status(), "stat data object");
      }
      it = ends.emplace(at.objno, st.ok() ? st->size : 0).first;
    }
    const uint64_t data_end =
        it->second > at.offset ? std::min(unit_end, pos + (it->second - at.offset)) : pos;
    if (!hole && data_end > pos) return pos;
    if (hole && data_end < unit_end) return data_end;
    pos = unit_end;
  }
  if (hole) return size;
  return ErrnoError(absl::StatusCode::kOutOfRange, ENXIO, "no data at or after the offset");
}

}  // namespace weft::objects
