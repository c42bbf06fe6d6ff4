// Inline data: a small file's bytes kept in its inode instead of in data
// objects (docs/ARCHITECTURE.md, "Inline data"). A file starts inline; a
// write that would not fit moves it to objects for good: the MDS writes the
// bytes to the file's first object (outside its lock, one move per file at
// a time, RequestRun) and then records that the data lives there.
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/status/status.h"
#include "mds/ops/ops.h"

namespace weft::mds {

uint64_t InlineLimit(OpContext& ctx, const Inode& rec) {
  return std::min<uint64_t>(ctx.options().inline_max_bytes, rec.layout.stripe.stripe_unit);
}

void StartInline(OpContext& ctx, Inode* rec) {
  if (!IsReg(*rec) || InlineLimit(ctx, *rec) == 0) return;
  rec->data_inline = true;
  rec->inline_data = "";
  ctx.InlineChanged(rec->ino);
}

bool InlineWritesFit(OpContext& ctx, const req::Written& op, const Inode& rec) {
  if (!IsReg(rec) || !rec.data_inline) return false;
  const uint64_t limit = InlineLimit(ctx, rec);
  for (const req::Written::Extent& e : op.inline_writes) {
    if (e.offset > limit || e.data.size() > limit - e.offset) return false;
  }
  return true;
}

void ApplyInlineWrites(OpContext& ctx, const req::Written& op, Inode* edit) {
  if (op.inline_writes.empty()) return;  // a report of times or attributes only
  if (!edit->inline_data) edit->inline_data.emplace();
  std::string* data = &*edit->inline_data;
  for (const req::Written::Extent& e : op.inline_writes) {
    const uint64_t end = e.offset + e.data.size();
    if (data->size() < end) data->resize(end, '\0');
    data->replace(e.offset, e.data.size(), e.data);
  }
  ++edit->inline_version;
  edit->allocated = data->size();
  ctx.InlineChanged(edit->ino);
}

void CutInline(OpContext& ctx, uint64_t size, Inode* edit) {
  if (!edit->data_inline || edit->inline_data.value_or("").size() <= size) return;
  edit->inline_data->resize(size);
  ++edit->inline_version;
  edit->allocated = size;
  ctx.InlineChanged(edit->ino);
}

absl::Status DoInline(OpContext& ctx, const req::Inline& op, Reply* reply) {
  ASSIGN_OR_RETURN(const Inode* inode, ctx.Inode(op.ino));
  if (!IsReg(*inode)) return Err(EINVAL, "inline data of a file that is not a regular file");
  if (!ctx.HasOpen(op.ino, op.uninline)) {
    return Err(EBADF, op.uninline ? "file not open for writing by this session"
                                    : "file not open by this session");
  }
  if (!inode->data_inline) {
    FillAttr(*inode, &reply->attr);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const std::string* data, ctx.InlineData(*inode));
  if (!op.uninline) {
    FillAttr(*inode, &reply->attr);
    reply->inline_data = *data;
    return absl::OkStatus();
  }
  if (!ctx.Moved(inode->ino, inode->inline_version)) {
    if (inode->layout.pool.value() == 0) {
      return Err(EINVAL, absl::StrCat("inode ", op.ino.value(), " has no data pool"));
    }
    InlineMove move;
    move.ino = inode->ino.value();
    move.pool = PoolId(inode->layout.pool.value());
    move.data = *data;
    move.inline_version = inode->inline_version;
    return ctx.MoveInline(std::move(move));
  }
  // The first object holds exactly these bytes now (the move replaced it
  // whole, and nobody changed them since).
  const Inode before = *inode;
  Inode* edit = ctx.Edit(before);
  edit->data_inline = false;
  edit->inline_data.reset();
  edit->inline_version = before.inline_version + 1;
  edit->allocated = std::min<uint64_t>(data->size(), before.size);
  FillAttr(*edit, &reply->attr);
  return absl::OkStatus();
}

}  // namespace weft::mds
