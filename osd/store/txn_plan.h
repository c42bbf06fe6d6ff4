// The in-memory plan of one Apply (and of RemoveCollection): what the write
// path prepares before the commit point and finishes after it. Internal to
// osd/store.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/kv/kv_store.h"
#include "osd/store/file_io.h"
#include "osd/store/object_draft.h"
#include "osd/store/store_format.h"

namespace weft::osd {

// One object touched by a transaction.
struct ObjectWork {
  ObjectWork(std::string oid_in, bool exists, const format::Onode& onode)
      : oid(std::move(oid_in)),
        committed_exists(exists),
        committed(onode),
        draft(exists, onode.size, onode.version, onode.mtime_ns) {}

  std::string oid;
  bool committed_exists;
  format::Onode committed;
  ObjectDraft draft;
  // Xattr names and omap keys this transaction put, so that a later Remove or
  // OmapClear in it deletes them too.
  std::set<std::string> xattrs_put;
  std::set<std::string> omap_put;
  // Filled by PrepareObject.
  uint64_t fid = 0;         // the data file after commit (0: none)
  uint64_t unlink_fid = 0;  // committed file to unlink after commit
  bool shrink = false;      // truncate the file to the draft size after commit
  std::unique_ptr<RandomFile> file;  // open in place, for the deferred writes
  std::vector<std::pair<uint64_t, format::DeferredRecord>> deferred;  // by seq
  // Checksums of the blocks whose content this transaction sets, as (block,
  // XXH3) by ascending block, each block once: exactly one of WriteNewFile,
  // WriteInline and PrepareInPlace fills it, in block order; PlanChecksums
  // checks that. A vector, not a map: a 4 MiB object has 256 of them, and a
  // node per block cost more than the hashing.
  std::vector<std::pair<uint64_t, uint64_t>> new_sums;
};

struct TxnPlan {
  common::KvWriteBatch batch;
  std::map<std::string, ObjectWork> objects;  // by oid
  std::vector<uint64_t> new_fids;             // files created before commit
  std::vector<uint64_t> reused_fids;          // spares written before commit
  std::vector<uint64_t> dropped_deferred;     // seqs whose records the batch deletes
  int64_t objects_delta = 0;
  int64_t bytes_delta = 0;
};

}  // namespace weft::osd
