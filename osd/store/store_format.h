// The object store's on-disk format: KV keys, KV values and data file names.
// The format itself is documented in store_format.cc, beside the code that
// writes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "osd/store/object_store.h"

namespace weft::osd::format {

// The onode: an object's KV record. fid 0 means "no data file": the object
// is empty, or (size > 0) its data is inline in the KV under InlineKey.
struct Onode {
  uint64_t size = 0;
  uint64_t fid = 0;
  Version version;
  int64_t mtime_ns = 0;
};

// A deferred overwrite: `data` goes at `offset` of data file `fid`.
struct DeferredRecord {
  uint64_t fid = 0;
  uint64_t offset = 0;
  std::string data;
};

// Escapes `s` so that the result sorts like `s` and is prefix-free.
void AppendEscaped(absl::string_view s, std::string* out);
// Parses one escaped string from the front of `*in`, advancing it.
bool ConsumeEscaped(absl::string_view* in, std::string* out);

// Keys.
std::string SuperblockKey();
std::string NextFidKey();
std::string CollectionKey(absl::string_view coll);
std::string CollectionKeyPrefix();                       // every collection
std::string MetaKey(absl::string_view coll, absl::string_view key);
std::string OnodeKey(absl::string_view coll, absl::string_view oid);
std::string OnodePrefix(absl::string_view coll);         // every onode of coll
std::string OnodeNamePrefix(absl::string_view coll,  // onodes of coll named name_prefix...
                            absl::string_view name_prefix);
std::string OnodeTagPrefix();                            // every onode of the store
std::string ChecksumKey(absl::string_view coll, absl::string_view oid, uint64_t group);
std::string ChecksumPrefix(absl::string_view coll, absl::string_view oid);
std::string XattrKey(absl::string_view coll, absl::string_view oid, absl::string_view name);
std::string XattrPrefix(absl::string_view coll, absl::string_view oid);
std::string OmapKey(absl::string_view coll, absl::string_view oid, absl::string_view key);
std::string OmapPrefix(absl::string_view coll, absl::string_view oid);
std::string InlineKey(absl::string_view coll, absl::string_view oid);
std::string DeferredKey(uint64_t seq);
std::string DeferredTagPrefix();
// Every key of a collection with one tag ('M', 'N', 'K', 'X', 'O', 'I').
std::string CollectionTagPrefix(char tag, absl::string_view coll);
constexpr char kTags[] = {'K', 'X', 'O', 'I', 'M', 'N'};

// Key parsers (false if the key is not of that kind).
bool ParseCollectionKey(absl::string_view key, std::string* coll);
bool ParseOnodeKey(absl::string_view key, std::string* coll, std::string* oid);
bool ParseDeferredKey(absl::string_view key, uint64_t* seq);
bool ParseChecksumGroup(absl::string_view key, absl::string_view prefix, uint64_t* group);

// Values.
std::string EncodeOnode(const Onode& onode);
absl::StatusOr<Onode> DecodeOnode(absl::string_view value);
// A checksum group's value: one le64 per block.
void AppendChecksum(uint64_t sum, std::string* group);
absl::StatusOr<std::vector<uint64_t>> DecodeChecksumGroup(absl::string_view value);
std::string EncodeDeferred(const DeferredRecord& record);
absl::StatusOr<DeferredRecord> DecodeDeferred(absl::string_view value);
std::string EncodeSuperblock(const Superblock& sb);
absl::StatusOr<Superblock> DecodeSuperblock(absl::string_view value);
std::string EncodeFixed64(uint64_t v);
absl::StatusOr<uint64_t> DecodeFixed64(absl::string_view value);

// Data files: "<16 lowercase hex digits of fid>".
std::string DataFileName(uint64_t fid);
bool ParseDataFileName(absl::string_view name, uint64_t* fid);

// An object or collection name fit for a log or error message: escaped and
// cut to a readable length.
std::string Printable(absl::string_view name);

}  // namespace weft::osd::format
