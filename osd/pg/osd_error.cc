#include "osd/pg/osd_error.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/rpc/rpc.h"

namespace weft::osd {
namespace {
constexpr char kOsdCodePayload[] = "weft/osd-code";
}  // namespace

absl::Status OsdError(pb::OsdErrorCode code, absl::string_view message) {
  absl::Status status(absl::StatusCode::kUnavailable, message);
  status.SetPayload(kOsdCodePayload, absl::Cord(absl::StrCat(static_cast<int>(code))));
  return status;
}

pb::OsdErrorCode OsdErrorCodeOf(const absl::Status& status) {
  if (auto payload = status.GetPayload(kOsdCodePayload)) {
    int code = 0;
    if (absl::SimpleAtoi(std::string(*payload), &code)) return static_cast<pb::OsdErrorCode>(code);
  }
  return pb::OSD_OK;
}

void FillStatus(const absl::Status& status, pb::Status* out) {
  rpc::ToProto(status, out);
  if (auto payload = status.GetPayload(kOsdCodePayload)) {
    int code = 0;
    if (absl::SimpleAtoi(std::string(*payload), &code)) out->set_code(code);
  }
}

}  // namespace weft::osd
