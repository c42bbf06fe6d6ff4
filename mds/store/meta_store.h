// The MDS's reads and writes of its objects in the metadata pool: inode table
// objects, directory fragments, tables and the journal. Thin over ObjectClient
// (which retries across map changes); no caching here.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fuse-client/lib/object_client.h"
#include "mds/fs/names.h"
#include "proto/mds.pb.h"

namespace weft::mds {

// The changes for one object in a flush: applied in one atomic request.
struct ObjectUpdate {
  bool remove = false;     // delete the object (nothing else applies)
  bool clear = false;      // OMAP_CLEAR first
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<std::string> rm;
};

class MetaStore {
 public:
  MetaStore(client::ObjectClient* objects, PoolId pool, uint32_t fs) : objects_(objects), pool_(pool), fs_(fs) {}

  uint32_t fs() const { return fs_; }
  PoolId pool() const { return pool_; }
  client::ObjectClient* objects() const { return objects_; }

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
  absl::Status RemoveSegment(uint64_t segment);

 private:
  absl::StatusOr<std::map<std::string, std::string>> ListOmap(const std::string& oid);

  client::ObjectClient* const objects_;
  const PoolId pool_;
  const uint32_t fs_;
};

// Journal framing: u32 length, u32 checksum (low 32 bits of XXH3), bytes.
void AppendFrame(const std::string& payload, std::string* out);
// Splits a segment into frames; stops at the first torn or corrupt frame and
// says where through `valid_bytes`.
std::vector<std::string> ParseFrames(const std::string& segment, size_t* valid_bytes);

}  // namespace weft::mds
