#include "common/objects/op_reply.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"

namespace weft::objects {
namespace {

constexpr int kLengthDelimited = 2;
constexpr int kResultsField = pb::OpReply::kResultsFieldNumber;
constexpr int kResultDataField = pb::ObjectOpResult::kDataFieldNumber;

void PutVarint(uint64_t v, std::string* out) {
  uint8_t bytes[10];  // the longest varint
  const uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(v, bytes);
  out->append(reinterpret_cast<const char*>(bytes), end - bytes);
}

// Reads a received message's slices front to back. The slices live in one
// shared vector, and every piece Share hands out holds it: a slice of up to
// 23 bytes keeps its bytes inside itself (gRPC's inlined slices), so they are
// valid only where that very slice lives, not in a copy of it.
class SliceReader {
 public:
  explicit SliceReader(std::vector<grpc::Slice> slices)
      : slices_(std::make_shared<const std::vector<grpc::Slice>>(std::move(slices))) {
    for (const grpc::Slice& s : *slices_) left_ += s.size();
    SkipEmpty();
  }

  // Bytes not read yet.
  size_t left() const { return left_; }

  bool ReadVarint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (left_ == 0) return false;
      const uint8_t byte = Current()[0];
      Advance(1);
      *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;  // more than ten bytes
  }

  // Appends the next n bytes to `out`.
  bool Copy(size_t n, std::string* out) {
    if (n > left_) return false;
    while (n > 0) {
      const size_t len = std::min(n, Run());
      out->append(reinterpret_cast<const char*>(Current()), len);
      Advance(len);
      n -= len;
    }
    return true;
  }

  // Appends the next n bytes to `out` as pieces of the slices that hold them.
  bool Share(size_t n, ByteChain* out) {
    if (n > left_) return false;
    while (n > 0) {
      const size_t len = std::min(n, Run());
      out->Append(
          SharedBytes(slices_, absl::string_view(reinterpret_cast<const char*>(Current()), len)));
      Advance(len);
      n -= len;
    }
    return true;
  }

 private:
  const grpc::Slice& Slice() const { return (*slices_)[index_]; }
  const uint8_t* Current() const { return Slice().begin() + offset_; }
  size_t Run() const { return Slice().size() - offset_; }
  void Advance(size_t n) {
    offset_ += n;
    left_ -= n;
    SkipEmpty();
  }
  void SkipEmpty() {
    while (index_ < slices_->size() && offset_ == Slice().size()) {
      ++index_;
      offset_ = 0;
    }
  }

  std::shared_ptr<const std::vector<grpc::Slice>> slices_;
  size_t index_ = 0, offset_ = 0, left_ = 0;
};

struct Field {
  uint64_t tag = 0;
  int number() const { return static_cast<int>(tag >> 3); }
  int wire_type() const { return static_cast<int>(tag & 7); }
};

// A field's tag, as protobuf reads one: 32 bits at most, field number not 0.
bool ReadTag(SliceReader& in, Field* field) {
  return in.ReadVarint(&field->tag) && field->tag <= 0xffffffffu && field->number() != 0;
}

// Copies the value of `field` (its tag already read) to `out`, after its tag.
bool CopyField(SliceReader& in, const Field& field, std::string* out) {
  PutVarint(field.tag, out);
  uint64_t v;
  switch (field.wire_type()) {
    case 0:
      if (!in.ReadVarint(&v)) return false;
      PutVarint(v, out);
      return true;
    case 1: return in.Copy(8, out);
    case 5: return in.Copy(4, out);
    case kLengthDelimited:
      if (!in.ReadVarint(&v)) return false;
      PutVarint(v, out);
      return in.Copy(v, out);
    default: return false;  // groups (3, 4) or no wire type at all
  }
}

// One ObjectOpResult of `length` bytes: `data` into *data, the rest parsed.
bool ParseResult(SliceReader& in, uint64_t length, pb::ObjectOpResult* result,
                 ByteChain* data) {
  if (length > in.left()) return false;
  const size_t end = in.left() - length;
  std::string rest;
  while (in.left() > end) {
    Field field;
    if (!ReadTag(in, &field)) return false;
    if (field.number() == kResultDataField && field.wire_type() == kLengthDelimited) {
      uint64_t n;
      if (!in.ReadVarint(&n) || n > in.left() - end) return false;
      data->Clear();  // a repeated singular field: the last one counts
      if (n >= kSharedDataBytes) {
        if (!in.Share(n, data)) return false;
      } else {
        std::string bytes;
        if (!in.Copy(n, &bytes)) return false;
        *data = ByteChain(std::move(bytes));
      }
      continue;
    }
    if (!CopyField(in, field, &rest)) return false;
  }
  return in.left() == end && result->ParseFromString(rest);
}

}  // namespace

absl::Status ParseOpReply(const grpc::ByteBuffer& buffer, pb::OpReply* reply,
                          std::vector<ByteChain>* data) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return absl::InternalError("unreadable OSD reply buffer");
  SliceReader in(std::move(slices));
  std::string rest;
  std::vector<pb::ObjectOpResult> results;
  data->clear();
  while (in.left() > 0) {
    Field field;
    bool ok = ReadTag(in, &field);
    if (ok && field.number() == kResultsField && field.wire_type() == kLengthDelimited) {
      uint64_t length;
      ok = in.ReadVarint(&length) &&
           ParseResult(in, length, &results.emplace_back(), &data->emplace_back());
    } else if (ok) {
      ok = CopyField(in, field, &rest);
    }
    if (!ok) {
      data->clear();
      return absl::InternalError(
          absl::StrCat("malformed OSD reply (", buffer.Length(), " bytes)"));
    }
  }
  if (!reply->ParseFromString(rest)) {
    data->clear();
    return absl::InternalError("malformed OSD reply header");
  }
  for (pb::ObjectOpResult& r : results) *reply->add_results() = std::move(r);
  return absl::OkStatus();
}

}  // namespace weft::objects
