// The MDS's reads and writes of its objects in the metadata pool: inode table
// objects, directory fragments, tables and the journal. Thin over the object
// layer (the real one retries across map changes); no caching here.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/objects/objects.h"
#include "mds/fs/names.h"
#include "mds/store/records.pb.h"

namespace weft::mds {

// The changes for one object in a flush: applied in one atomic request.
struct ObjectUpdate {
  bool remove = false;     // delete the object (nothing else applies)
  bool clear = false;      // OMAP_CLEAR first
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<std::string> rm;
};

// What a flush writes: object name -> update, and the sequence it covers.
struct FlushBatch {
  uint64_t seq = 0;
  std::map<std::string, ObjectUpdate> updates;
  size_t inodes = 0, dentries = 0;
};

class MetaStore {
 public:
  // Rank `rank` of filesystem `fs`: its journal and tables.
  MetaStore(objects::Objects* objects, PoolId pool, uint32_t fs, uint32_t rank)
      : objects_(objects), pool_(pool), fs_(fs), rank_(rank) {}

  uint32_t fs() const { return fs_; }
  PoolId pool() const { return pool_; }
  objects::Objects* objects() const { return objects_; }

  // The inodes of `inos` that exist (one request per inode table object).
  absl::StatusOr<std::vector<pb::InodeRec>> LoadInodes(const std::vector<uint64_t>& inos);
  // The inline data of `ino` as last flushed (none stored: empty, version 0).
  absl::StatusOr<pb::InlineRec> LoadInline(uint64_t ino);
  // Every entry of a fragment (an absent object is an empty fragment).
  absl::StatusOr<std::vector<pb::DentryRec>> LoadFrag(uint64_t dir, Frag frag);
  // Every key/value of a table object (sessions, strays, purge, inotable).
  absl::StatusOr<std::map<std::string, std::string>> LoadTable(absl::string_view table);

  absl::Status Apply(const std::string& oid, const ObjectUpdate& update);

  // Journal objects.
  absl::StatusOr<std::optional<pb::JournalHead>> ReadHead();
  absl::Status WriteHead(const pb::JournalHead& head);
  // Writes `bytes` at `offset` of a segment (journal writers reserve ranges).
  absl::Status WriteSegment(uint64_t segment, uint64_t offset, const std::string& bytes);
  // NotFound when the segment does not exist.
  absl::StatusOr<std::string> ReadSegment(uint64_t segment);
  // Its bytes from `offset` on (a standby-replay daemon reading on).
  absl::StatusOr<std::string> ReadSegmentFrom(uint64_t segment, uint64_t offset);
  absl::StatusOr<bool> SegmentExists(uint64_t segment);
  absl::Status RemoveSegment(uint64_t segment);

 private:
  absl::StatusOr<std::map<std::string, std::string>> ListOmap(const std::string& oid);

  objects::Objects* const objects_;
  const PoolId pool_;
  const uint32_t fs_;
  const uint32_t rank_;
};

}  // namespace weft::mds
