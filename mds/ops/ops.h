// The namespace operations, one file each under mds/ops/. Each runs whole
// under the rank's lock through an OpContext (see op_context.h): it checks,
// reads what it needs (returning NeedLoad() when something is not cached),
// describes its changes in the context and fills the reply.
#pragma once

#include "mds/fs/layout.h"
#include "mds/ops/op_context.h"
#include "mds/reply.h"
#include "mds/request.h"
#include "proto/mds_client.pb.h"
#include "mds/store/records.pb.h"

namespace weft::mds {

absl::Status DoLookup(OpContext& ctx, const req::Lookup& op, Reply* reply);
absl::Status DoGetattr(OpContext& ctx, const req::Getattr& op, Reply* reply);
absl::Status DoSetattr(OpContext& ctx, const req::Setattr& op, Reply* reply);
absl::Status DoCreate(OpContext& ctx, const req::Create& op, Reply* reply);
absl::Status DoMkdir(OpContext& ctx, const req::Mkdir& op, Reply* reply);
absl::Status DoSymlink(OpContext& ctx, const req::Symlink& op, Reply* reply);
absl::Status DoLink(OpContext& ctx, const req::Link& op, Reply* reply);
absl::Status DoUnlink(OpContext& ctx, const req::Unlink& op, Reply* reply);
absl::Status DoRmdir(OpContext& ctx, const req::Rmdir& op, Reply* reply);
absl::Status DoRename(OpContext& ctx, const req::Rename& op, Reply* reply);
absl::Status DoReadlink(OpContext& ctx, const req::Readlink& op, Reply* reply);
absl::Status DoReaddir(OpContext& ctx, const req::Readdir& op, Reply* reply);
absl::Status DoGetxattr(OpContext& ctx, const req::Getxattr& op, Reply* reply);
absl::Status DoSetxattr(OpContext& ctx, const req::Setxattr& op, Reply* reply);
absl::Status DoListxattr(OpContext& ctx, const req::Listxattr& op, Reply* reply);
absl::Status DoRemovexattr(OpContext& ctx, const req::Removexattr& op, Reply* reply);
absl::Status DoStatfs(OpContext& ctx, const req::Statfs& op, Reply* reply);
absl::Status DoOpen(OpContext& ctx, const req::Open& op, Reply* reply);
absl::Status DoAccess(OpContext& ctx, const req::Access& op, Reply* reply);
absl::Status DoWritten(OpContext& ctx, const req::Written& op, Reply* reply);
absl::Status DoInline(OpContext& ctx, const req::Inline& op, Reply* reply);
// Reads served by a client: relatime on each inode (see AtimeOp).
absl::Status DoAtime(OpContext& ctx, const req::Atime& op, Reply* reply);

// Inline data (mds/ops/inline.cc).
// How many bytes `rec` may keep inline: the rank's limit, within its first
// stripe unit (so that a move writes one object).
uint64_t InlineLimit(OpContext& ctx, const Inode& rec);
// A new regular file starts with empty inline data when the rank keeps any.
void StartInline(OpContext& ctx, Inode* rec);
// Whether WrittenOp.inline_writes fit in the inline data of `rec`.
bool InlineWritesFit(OpContext& ctx, const req::Written& op, const Inode& rec);
// Applies them to `edit` (they fit, its bytes are loaded).
void ApplyInlineWrites(OpContext& ctx, const req::Written& op, Inode* edit);
// Cuts the inline bytes of `edit` (loaded) to `size`.
void CutInline(OpContext& ctx, uint64_t size, Inode* edit);

// Shared checks.
// The parent directory with search (and, when `modify`, write) permission.
absl::StatusOr<const Inode*> ParentFor(OpContext& ctx, InodeId parent, bool modify);
// A directory's mtime and ctime set to now.
void TouchDir(OpContext& ctx, const Inode& dir);
// Removes the empty directory `dir` from `parent` (its link count and
// statistics; the dentry is the caller's) and fills `last` with how it
// ends, nlink 0, for a client that holds it open (mds/ops/unlink.cc).
void RemoveDir(OpContext& ctx, const Inode& parent, const Inode& dir,
               fs::Attr* last);

// Layouts (mds/ops/layout.cc).
// What a new file in `dir` gets: the dir_layout of `dir` or of its nearest
// ancestor that has one, else the filesystem default. May be NeedLoad.
absl::StatusOr<FileLayout> EffectiveDirLayout(OpContext& ctx, InodeId dir);
// The value of a layout xattr (x.target != kNone); ENODATA when there is none.
absl::StatusOr<std::string> GetLayoutXattr(OpContext& ctx, const Inode& inode,
                                           const LayoutXattr& x);
// Sets a layout (XATTR_CREATE/REPLACE are ignored, as CephFS does): EINVAL for
// a wrong inode type or a bad value, EPERM unless owner or root, ENOTEMPTY
// for a file with data, EBUSY for a file another session has open for writing.
absl::Status SetLayoutXattr(OpContext& ctx, const Inode& inode, const std::string& name,
                            const LayoutXattr& x, const std::string& value,
                            Reply* reply);
// Removes a directory's own layout: ENODATA when it has none.
absl::Status RemoveLayoutXattr(OpContext& ctx, const Inode& inode, const LayoutXattr& x,
                               Reply* reply);

}  // namespace weft::mds
