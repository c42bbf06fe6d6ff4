// The state of one object while a transaction's ops are applied to it in
// memory, before any I/O: which bytes come from the committed data file (the
// "base") and which are new. ObjectStore turns a finished draft into file
// writes and KV updates.
//
// Content model: byte x of the draft, for x < size(), is
//   - the byte of the extent that covers x, if one does;
//   - else base byte x, if x < base_limit();
//   - else zero.
// Extents never overlap and all lie below size().
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/bytes/shared_bytes.h"
#include "osd/store/object_store.h"

namespace weft::osd {

class ObjectDraft {
 public:
  // `exists`, `size`, ... describe the committed object.
  ObjectDraft(bool exists, uint64_t size, Version version, int64_t mtime_ns);

  void Touch();
  void Write(uint64_t offset, SharedBytes data);
  void WriteFull(SharedBytes data);
  void Truncate(uint64_t size);
  void Remove();
  void SetVersion(Version version, int64_t mtime_ns);

  bool exists() const { return exists_; }
  uint64_t size() const { return size_; }
  uint64_t base_limit() const { return base_limit_; }
  // The data no longer derives from the committed file (created, replaced or
  // removed in this transaction): it goes to a new file.
  bool reset() const { return reset_; }
  const Version& version() const { return version_; }
  int64_t mtime_ns() const { return mtime_ns_; }

  // Whether every byte is zero, when that is known without reading the base:
  // false whenever some byte comes from it.
  bool KnownZero() const;
  // Whether any byte of [offset, offset + length) comes from the base.
  bool NeedsBase(uint64_t offset, uint64_t length) const;
  // `*buf` holds the base bytes of [offset, offset + buf->size()) (anything
  // past the base); replaces every byte that does not come from the base.
  void Overlay(uint64_t offset, std::string* buf) const;
  // The bytes of [offset, offset + length) when one extent holds them all
  // (the common whole-object write), without copying; nullopt otherwise.
  std::optional<absl::string_view> Covered(uint64_t offset, uint64_t length) const;

  // The ranges of [0, min(size(), old_size)) whose content differs from the
  // base (new extents, and zeros where the base was cut off), merged and in
  // order, with their new content; and their total length.
  std::vector<std::pair<uint64_t, std::string>> ChangedRanges(uint64_t old_size) const;
  uint64_t ChangedBytes(uint64_t old_size) const;
  // Extents (parts of them) at or past `start`, in order; the views stay valid
  // while the draft is unchanged.
  std::vector<std::pair<uint64_t, absl::string_view>> ExtentsFrom(uint64_t start) const;

 private:
  void ResetData();
  void PutExtent(uint64_t offset, SharedBytes data);
  void CutExtentsAt(uint64_t size);
  // Merged [begin, end) intervals of the changed ranges below `limit`.
  std::vector<std::pair<uint64_t, uint64_t>> ChangedIntervals(uint64_t old_size) const;

  bool exists_;
  bool reset_ = false;
  uint64_t size_;
  uint64_t base_limit_;
  // By offset. Cutting one shares its bytes: nothing is copied until the
  // store writes or overlays them.
  std::map<uint64_t, SharedBytes> extents_;
  Version version_;
  int64_t mtime_ns_;
};

}  // namespace weft::osd
