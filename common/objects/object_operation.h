// One request's operations on one object, and what they return. A request
// holds either reads or mutations, never both (the OSD refuses a mix: a read's
// view of a half-applied mutation would be ambiguous), and applies them in
// order and atomically.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/bytes/byte_chain.h"
#include "proto/osd.pb.h"

namespace weft::objects {

// The kinds of operation (proto/osd.proto OpType): READ through OMAP_LIST
// read, WRITE through OMAP_CLEAR change the object. The OSD and both
// Objects implementations classify by these.
inline bool IsRead(pb::OpType type) { return type >= pb::READ && type <= pb::OMAP_LIST; }
inline bool IsMutation(pb::OpType type) { return type >= pb::WRITE && type <= pb::OMAP_CLEAR; }

class ObjectOperation {
 public:
  ObjectOperation& Create(bool exclusive);
  ObjectOperation& Write(uint64_t offset, std::string data);
  ObjectOperation& WriteFull(std::string data);
  ObjectOperation& Append(std::string data);
  ObjectOperation& Truncate(uint64_t size);
  ObjectOperation& Remove();
  ObjectOperation& SetXattr(std::string name, std::string value);
  ObjectOperation& RmXattr(std::string name);
  ObjectOperation& OmapSet(std::vector<std::pair<std::string, std::string>> kvs);
  ObjectOperation& OmapRm(std::vector<std::string> keys);
  ObjectOperation& OmapClear();

  ObjectOperation& Read(uint64_t offset, uint64_t length);  // length 0 = to the end
  ObjectOperation& Stat();
  ObjectOperation& GetXattr(std::string name);
  ObjectOperation& GetXattrs();
  ObjectOperation& OmapGet(std::vector<std::string> keys);
  ObjectOperation& OmapList(std::string start_after, std::string prefix, uint32_t max_entries);

  const std::vector<pb::ObjectOp>& ops() const { return ops_; }
  std::vector<pb::ObjectOp> TakeOps() && { return std::move(ops_); }

 private:
  pb::ObjectOp& Add(pb::OpType type);
  std::vector<pb::ObjectOp> ops_;
};

struct OpResult {
  struct Item {
    ByteChain data;  // a read's bytes, where they were received
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    uint64_t version_epoch = 0, version_seq = 0;
    std::vector<std::pair<std::string, std::string>> kvs;
    bool more = false;
  };
  std::vector<Item> items;                      // one per operation, in order
  uint64_t version_epoch = 0, version_seq = 0;  // of a mutation
  // Of a mutation: the object's logical size before and after it (0 when
  // absent; both 0 when the OSD had already applied it, on a retry).
  uint64_t size_before = 0, size_after = 0;
  int64_t SizeChange() const {
    return static_cast<int64_t>(size_after) - static_cast<int64_t>(size_before);
  }
};

struct ObjectStat {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t version_epoch = 0, version_seq = 0;
};

}  // namespace weft::objects
