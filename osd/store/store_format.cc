// On-disk format of the object store. Changing anything here needs a format
// version bump and a converter.
//
// Directory layout:
//   <dir>/meta/               LevelDB (absent when a KvStore is injected)
//   <dir>/data/<fid>          object data; <fid> is 16 lowercase hex digits of
//                             a 64-bit file id. A file no onode references
//                             is garbage or a spare: Open empties it and may
//                             reuse it for another object (same or new fid
//                             space; nothing on disk marks spares).
//
// Escaped strings (collection names and object names inside keys):
//   esc(s) = s with every 0x00 byte written as 0x00 0xff, then 0x00 0x01.
//   esc preserves bytewise order (esc(a) < esc(b) iff a < b) and no esc(a) is a
//   proper prefix of another esc(b), so "tag esc(coll)" is a prefix of the keys
//   of exactly one collection and "tag esc(coll) esc(oid)" of exactly one
//   object, and listing objects in key order lists them in name order.
//
// Keys (first byte is a tag; integers in keys are big-endian so they sort):
//   'A' "superblock"                  -> superblock record (below)
//   'A' "next_fid"                    -> le64: a lower bound for the next file
//                                        id (Open also scans, see Recover)
//   'C' esc(coll)                     -> "" : the collection exists
//   'M' esc(coll) key                 -> collection metadata value (raw key)
//   'N' esc(coll) esc(oid)            -> onode (below)
//   'K' esc(coll) esc(oid) be64(grp)  -> checksum group grp: le64 xxHash3 of
//                                        each of its blocks, in order (below)
//   'X' esc(coll) esc(oid) name       -> xattr value (raw name)
//   'O' esc(coll) esc(oid) key        -> omap value (raw key)
//   'I' esc(coll) esc(oid)            -> inline data: bytes [0, n) of an
//                                        object whose onode has fid 0 and
//                                        size > 0, n <= size; bytes [n, size)
//                                        are zeros (trailing zeros are not
//                                        stored)
//   'D' be64(seq)                     -> deferred write record (below)
//
// Values (integers little-endian):
//   onode:     u8 format=1, le64 size, le64 fid (0 = no file: the data is
//              inline when size > 0), le64 epoch,
//              le64 seq, le64 mtime_ns (two's complement)
//   deferred:  u8 format=1, le64 fid, le64 offset, data bytes (rest of value)
//   superblock: "WEFTOSD\0", le32 format (1 or 2), le32 fsid length, fsid
//              bytes, le32 osd_id, le64 created_ms, le32 csum_block_bytes,
//              [format 2 only: le32 csum_group_blocks], le64 xxHash3 of every
//              preceding byte of the value. Format 1 means groups of 1 block;
//              a store with groups of 1 is still written as format 1.
//
// Checksum block blk covers data bytes [blk*B, min((blk+1)*B, size)) where B
// is the superblock's csum_block_bytes: the last block is short. Group grp
// holds the checksums of blocks [grp*G, min((grp+1)*G, ceil(S/B))) where G is
// the superblock's csum_group_blocks: an object of size S has exactly
// ceil(ceil(S/B)/G) checksum keys, each with one le64 per block it covers
// (only the last group may be short), written in the same batch as the onode
// that gives S. Groups keep the keys per MiB of data few (LevelDB's work per
// key was a tenth of an OSD's CPU with one key per 16 KiB block).
#include "osd/store/store_format.h"

#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/checksum/checksum.h"

namespace weft::osd::format {
namespace {

constexpr char kSuperblockMagic[8] = {'W', 'E', 'F', 'T', 'O', 'S', 'D', '\0'};
constexpr uint32_t kSuperblockFormat = 2;     // with csum_group_blocks
constexpr uint32_t kSuperblockFormatOne = 1;  // groups of one block
constexpr uint8_t kOnodeFormat = 1;
constexpr uint8_t kDeferredFormat = 1;
constexpr size_t kOnodeBytes = 1 + 5 * 8;
constexpr size_t kDeferredHeaderBytes = 1 + 2 * 8;

void PutLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutBe64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Reads a little-endian integer of `bytes` bytes from the front of `*in`.
bool GetLe(absl::string_view* in, int bytes, uint64_t* v) {
  if (in->size() < static_cast<size_t>(bytes)) return false;
  *v = 0;
  for (int i = 0; i < bytes; ++i) {
    *v |= static_cast<uint64_t>(static_cast<unsigned char>((*in)[i])) << (8 * i);
  }
  in->remove_prefix(bytes);
  return true;
}

uint64_t GetBe64(absl::string_view in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

std::string TagColl(char tag, absl::string_view coll) {
  std::string key(1, tag);
  AppendEscaped(coll, &key);
  return key;
}

std::string TagObject(char tag, absl::string_view coll, absl::string_view oid) {
  std::string key = TagColl(tag, coll);
  AppendEscaped(oid, &key);
  return key;
}

}  // namespace

namespace {
// The escaped bytes of `s` without the terminator: a prefix of the escaped
// form of every string starting with `s`.
void AppendEscapedBytes(absl::string_view s, std::string* out) {
  for (char c : s) {
    out->push_back(c);
    if (c == '\0') out->push_back('\xff');
  }
}
}  // namespace

void AppendEscaped(absl::string_view s, std::string* out) {
  AppendEscapedBytes(s, out);
  out->push_back('\0');
  out->push_back('\x01');
}

bool ConsumeEscaped(absl::string_view* in, std::string* out) {
  out->clear();
  size_t i = 0;
  while (i < in->size()) {
    const char c = (*in)[i];
    if (c != '\0') {
      out->push_back(c);
      ++i;
      continue;
    }
    if (i + 1 >= in->size()) return false;
    const char next = (*in)[i + 1];
    if (next == '\x01') {
      in->remove_prefix(i + 2);
      return true;
    }
    if (next != '\xff') return false;
    out->push_back('\0');
    i += 2;
  }
  return false;
}

std::string SuperblockKey() { return "Asuperblock"; }
std::string NextFidKey() { return "Anext_fid"; }
std::string CollectionKey(absl::string_view coll) { return TagColl('C', coll); }
std::string CollectionKeyPrefix() { return "C"; }
std::string MetaKey(absl::string_view coll, absl::string_view key) {
  return absl::StrCat(TagColl('M', coll), key);
}
std::string OnodeKey(absl::string_view coll, absl::string_view oid) {
  return TagObject('N', coll, oid);
}
std::string OnodePrefix(absl::string_view coll) { return TagColl('N', coll); }
std::string OnodeNamePrefix(absl::string_view coll, absl::string_view name_prefix) {
  std::string key = TagColl('N', coll);
  AppendEscapedBytes(name_prefix, &key);
  return key;
}
std::string OnodeTagPrefix() { return "N"; }
std::string ChecksumKey(absl::string_view coll, absl::string_view oid, uint64_t group) {
  std::string key = TagObject('K', coll, oid);
  PutBe64(&key, group);
  return key;
}
std::string ChecksumPrefix(absl::string_view coll, absl::string_view oid) {
  return TagObject('K', coll, oid);
}
std::string XattrKey(absl::string_view coll, absl::string_view oid, absl::string_view name) {
  return absl::StrCat(TagObject('X', coll, oid), name);
}
std::string XattrPrefix(absl::string_view coll, absl::string_view oid) {
  return TagObject('X', coll, oid);
}
std::string OmapKey(absl::string_view coll, absl::string_view oid, absl::string_view key) {
  return absl::StrCat(TagObject('O', coll, oid), key);
}
std::string OmapPrefix(absl::string_view coll, absl::string_view oid) {
  return TagObject('O', coll, oid);
}
std::string InlineKey(absl::string_view coll, absl::string_view oid) {
  return TagObject('I', coll, oid);
}
std::string DeferredKey(uint64_t seq) {
  std::string key = "D";
  PutBe64(&key, seq);
  return key;
}
std::string DeferredTagPrefix() { return "D"; }
std::string CollectionTagPrefix(char tag, absl::string_view coll) { return TagColl(tag, coll); }

bool ParseCollectionKey(absl::string_view key, std::string* coll) {
  if (key.empty() || key[0] != 'C') return false;
  key.remove_prefix(1);
  return ConsumeEscaped(&key, coll) && key.empty();
}

bool ParseOnodeKey(absl::string_view key, std::string* coll, std::string* oid) {
  if (key.empty() || key[0] != 'N') return false;
  key.remove_prefix(1);
  return ConsumeEscaped(&key, coll) && ConsumeEscaped(&key, oid) && key.empty();
}

bool ParseDeferredKey(absl::string_view key, uint64_t* seq) {
  if (key.size() != 9 || key[0] != 'D') return false;
  *seq = GetBe64(key.substr(1));
  return true;
}

bool ParseChecksumGroup(absl::string_view key, absl::string_view prefix, uint64_t* group) {
  if (key.size() != prefix.size() + 8 || key.substr(0, prefix.size()) != prefix) return false;
  *group = GetBe64(key.substr(prefix.size()));
  return true;
}

std::string EncodeOnode(const Onode& onode) {
  std::string out;
  out.push_back(static_cast<char>(kOnodeFormat));
  PutLe(&out, onode.size, 8);
  PutLe(&out, onode.fid, 8);
  PutLe(&out, onode.version.epoch, 8);
  PutLe(&out, onode.version.seq, 8);
  PutLe(&out, static_cast<uint64_t>(onode.mtime_ns), 8);
  return out;
}

absl::StatusOr<Onode> DecodeOnode(absl::string_view value) {
  if (value.size() != kOnodeBytes || static_cast<uint8_t>(value[0]) != kOnodeFormat) {
    return absl::DataLossError(absl::StrCat("bad onode record (", value.size(), " bytes)"));
  }
  value.remove_prefix(1);
  Onode onode;
  uint64_t mtime = 0;
  GetLe(&value, 8, &onode.size);
  GetLe(&value, 8, &onode.fid);
  GetLe(&value, 8, &onode.version.epoch);
  GetLe(&value, 8, &onode.version.seq);
  GetLe(&value, 8, &mtime);
  onode.mtime_ns = static_cast<int64_t>(mtime);
  return onode;
}

void AppendChecksum(uint64_t sum, std::string* group) { PutLe(group, sum, 8); }

absl::StatusOr<std::vector<uint64_t>> DecodeChecksumGroup(absl::string_view value) {
  if (value.empty() || value.size() % 8 != 0) {
    return absl::DataLossError(absl::StrCat("bad checksum group (", value.size(), " bytes)"));
  }
  std::vector<uint64_t> sums(value.size() / 8);
  for (uint64_t& sum : sums) GetLe(&value, 8, &sum);
  return sums;
}

std::string EncodeFixed64(uint64_t v) {
  std::string out;
  PutLe(&out, v, 8);
  return out;
}

absl::StatusOr<uint64_t> DecodeFixed64(absl::string_view value) {
  uint64_t v = 0;
  if (value.size() != 8 || !GetLe(&value, 8, &v)) {
    return absl::DataLossError(absl::StrCat("bad 8-byte record (", value.size(), " bytes)"));
  }
  return v;
}

std::string EncodeDeferred(const DeferredRecord& record) {
  std::string out;
  out.reserve(kDeferredHeaderBytes + record.data.size());
  out.push_back(static_cast<char>(kDeferredFormat));
  PutLe(&out, record.fid, 8);
  PutLe(&out, record.offset, 8);
  out.append(record.data);
  return out;
}

absl::StatusOr<DeferredRecord> DecodeDeferred(absl::string_view value) {
  if (value.size() < kDeferredHeaderBytes || static_cast<uint8_t>(value[0]) != kDeferredFormat) {
    return absl::DataLossError("bad deferred write record");
  }
  value.remove_prefix(1);
  DeferredRecord record;
  GetLe(&value, 8, &record.fid);
  GetLe(&value, 8, &record.offset);
  record.data = std::string(value);
  return record;
}

std::string EncodeSuperblock(const Superblock& sb) {
  const bool one = sb.csum_group_blocks == 1;
  std::string out(kSuperblockMagic, sizeof(kSuperblockMagic));
  PutLe(&out, one ? kSuperblockFormatOne : kSuperblockFormat, 4);
  PutLe(&out, sb.fsid.size(), 4);
  out.append(sb.fsid);
  PutLe(&out, static_cast<uint32_t>(sb.osd_id), 4);
  PutLe(&out, static_cast<uint64_t>(sb.created_ms), 8);
  PutLe(&out, sb.csum_block_bytes, 4);
  if (!one) PutLe(&out, sb.csum_group_blocks, 4);
  PutLe(&out, common::Checksum64(out), 8);
  return out;
}

absl::StatusOr<Superblock> DecodeSuperblock(absl::string_view value) {
  constexpr size_t kTrailer = 8;
  if (value.size() < sizeof(kSuperblockMagic) + kTrailer ||
      std::memcmp(value.data(), kSuperblockMagic, sizeof(kSuperblockMagic)) != 0) {
    return absl::DataLossError("bad superblock magic");
  }
  absl::string_view trailer = value.substr(value.size() - kTrailer);
  uint64_t stored_sum = 0;
  GetLe(&trailer, 8, &stored_sum);
  absl::string_view body = value.substr(0, value.size() - kTrailer);
  if (common::Checksum64(body) != stored_sum) {
    return absl::DataLossError("superblock checksum mismatch");
  }
  body.remove_prefix(sizeof(kSuperblockMagic));
  uint64_t format = 0, fsid_len = 0, osd_id = 0, created = 0, block = 0, group = 1;
  if (!GetLe(&body, 4, &format) || (format != kSuperblockFormat && format != kSuperblockFormatOne)) {
    return absl::DataLossError(absl::StrCat("unsupported superblock format ", format));
  }
  if (!GetLe(&body, 4, &fsid_len) || body.size() < fsid_len) {
    return absl::DataLossError("superblock truncated");
  }
  Superblock sb;
  sb.fsid = std::string(body.substr(0, fsid_len));
  body.remove_prefix(fsid_len);
  if (!GetLe(&body, 4, &osd_id) || !GetLe(&body, 8, &created) || !GetLe(&body, 4, &block) ||
      (format == kSuperblockFormat && !GetLe(&body, 4, &group)) || !body.empty()) {
    return absl::DataLossError("superblock has the wrong length");
  }
  sb.osd_id = static_cast<int32_t>(osd_id);
  sb.created_ms = static_cast<int64_t>(created);
  sb.csum_block_bytes = static_cast<uint32_t>(block);
  sb.csum_group_blocks = static_cast<uint32_t>(group);
  if (sb.csum_block_bytes == 0) return absl::DataLossError("superblock has no checksum block size");
  if (sb.csum_group_blocks == 0) return absl::DataLossError("superblock has no checksum group size");
  return sb;
}

std::string DataFileName(uint64_t fid) { return absl::StrFormat("%016x", fid); }

bool ParseDataFileName(absl::string_view name, uint64_t* fid) {
  if (name.size() != 16) return false;
  uint64_t v = 0;
  for (char c : name) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return false;
    }
    v = (v << 4) | static_cast<uint64_t>(digit);
  }
  *fid = v;
  return true;
}

std::string Printable(absl::string_view name) {
  constexpr size_t kMaxShown = 80;
  if (name.size() <= kMaxShown) return absl::CHexEscape(name);
  return absl::StrCat(absl::CHexEscape(name.substr(0, kMaxShown)), "...(", name.size(),
                      " bytes)");
}

}  // namespace weft::osd::format
