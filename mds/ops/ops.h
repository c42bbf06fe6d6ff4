// The namespace operations, one file each under mds/ops/. Each runs whole
// under the rank's lock through an OpContext (see op_context.h): it checks,
// reads what it needs (returning NeedLoad() when something is not cached),
// describes its changes in the context and fills the reply.
#pragma once

#include "mds/fs/layout.h"
#include "mds/ops/op_context.h"
#include "proto/mds_client.pb.h"
#include "mds/store/records.pb.h"

namespace weft::mds {

absl::Status DoLookup(OpContext& ctx, const pb::LookupOp& op, pb::MetaReply* reply);
absl::Status DoGetattr(OpContext& ctx, const pb::GetattrOp& op, pb::MetaReply* reply);
absl::Status DoSetattr(OpContext& ctx, const pb::SetattrOp& op, pb::MetaReply* reply);
absl::Status DoCreate(OpContext& ctx, const pb::CreateOp& op, pb::MetaReply* reply);
absl::Status DoMkdir(OpContext& ctx, const pb::MkdirOp& op, pb::MetaReply* reply);
absl::Status DoSymlink(OpContext& ctx, const pb::SymlinkOp& op, pb::MetaReply* reply);
absl::Status DoLink(OpContext& ctx, const pb::LinkOp& op, pb::MetaReply* reply);
absl::Status DoUnlink(OpContext& ctx, const pb::UnlinkOp& op, pb::MetaReply* reply);
absl::Status DoRmdir(OpContext& ctx, const pb::RmdirOp& op, pb::MetaReply* reply);
absl::Status DoRename(OpContext& ctx, const pb::RenameOp& op, pb::MetaReply* reply);
absl::Status DoReadlink(OpContext& ctx, const pb::ReadlinkOp& op, pb::MetaReply* reply);
absl::Status DoReaddir(OpContext& ctx, const pb::ReaddirOp& op, pb::MetaReply* reply);
absl::Status DoGetxattr(OpContext& ctx, const pb::GetxattrOp& op, pb::MetaReply* reply);
absl::Status DoSetxattr(OpContext& ctx, const pb::SetxattrOp& op, pb::MetaReply* reply);
absl::Status DoListxattr(OpContext& ctx, const pb::ListxattrOp& op, pb::MetaReply* reply);
absl::Status DoRemovexattr(OpContext& ctx, const pb::RemovexattrOp& op, pb::MetaReply* reply);
absl::Status DoStatfs(OpContext& ctx, const pb::StatfsOp& op, pb::MetaReply* reply);
absl::Status DoOpen(OpContext& ctx, const pb::OpenOp& op, pb::MetaReply* reply);
absl::Status DoAccess(OpContext& ctx, const pb::AccessOp& op, pb::MetaReply* reply);
absl::Status DoWritten(OpContext& ctx, const pb::WrittenOp& op, pb::MetaReply* reply);
absl::Status DoInline(OpContext& ctx, const pb::InlineOp& op, pb::MetaReply* reply);
// Reads served by a client: relatime on each inode (see AtimeOp).
absl::Status DoAtime(OpContext& ctx, const pb::AtimeOp& op, pb::MetaReply* reply);

// Inline data (mds/ops/inline.cc).
// How many bytes `rec` may keep inline: the rank's limit, within its first
// stripe unit (so that a move writes one object).
uint64_t InlineLimit(OpContext& ctx, const pb::InodeRec& rec);
// A new regular file starts with empty inline data when the rank keeps any.
void StartInline(OpContext& ctx, pb::InodeRec* rec);
// Whether WrittenOp.inline_writes fit in the inline data of `rec`.
bool InlineWritesFit(OpContext& ctx, const pb::WrittenOp& op, const pb::InodeRec& rec);
// Applies them to `edit` (they fit, its bytes are loaded).
void ApplyInlineWrites(OpContext& ctx, const pb::WrittenOp& op, pb::InodeRec* edit);
// Cuts the inline bytes of `edit` (loaded) to `size`.
void CutInline(OpContext& ctx, uint64_t size, pb::InodeRec* edit);

// Shared checks.
// The parent directory with search (and, when `modify`, write) permission.
absl::StatusOr<const pb::InodeRec*> ParentFor(OpContext& ctx, uint64_t parent, bool modify);
// A directory's mtime and ctime set to now.
void TouchDir(OpContext& ctx, const pb::InodeRec& dir);
// Removes the empty directory `dir` from `parent` (its link count and
// statistics; the dentry is the caller's) and fills `last` with how it
// ends, nlink 0, for a client that holds it open (mds/ops/unlink.cc).
void RemoveDir(OpContext& ctx, const pb::InodeRec& parent, const pb::InodeRec& dir,
               pb::Attr* last);

// Layouts (mds/ops/layout.cc).
// What a new file in `dir` gets: the dir_layout of `dir` or of its nearest
// ancestor that has one, else the filesystem default. May be NeedLoad.
absl::StatusOr<pb::FileLayout> EffectiveDirLayout(OpContext& ctx, uint64_t dir);
// The value of a layout xattr (x.target != kNone); ENODATA when there is none.
absl::StatusOr<std::string> GetLayoutXattr(OpContext& ctx, const pb::InodeRec& inode,
                                           const LayoutXattr& x);
// Sets a layout (XATTR_CREATE/REPLACE are ignored, as CephFS does): EINVAL for
// a wrong inode type or a bad value, EPERM unless owner or root, ENOTEMPTY
// for a file with data, EBUSY for a file another session has open for writing.
absl::Status SetLayoutXattr(OpContext& ctx, const pb::InodeRec& inode, const std::string& name,
                            const LayoutXattr& x, const std::string& value,
                            pb::MetaReply* reply);
// Removes a directory's own layout: ENODATA when it has none.
absl::Status RemoveLayoutXattr(OpContext& ctx, const pb::InodeRec& inode, const LayoutXattr& x,
                               pb::MetaReply* reply);

}  // namespace weft::mds
