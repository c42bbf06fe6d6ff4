// OSD-specific outcomes that a client acts on (refresh its map, retry later)
// travel as negative codes in pb::Status. Inside the OSD they are ordinary
// absl::Status values (kUnavailable) tagged with a payload.
#pragma once

#include "absl/status/status.h"
#include "proto/osd.pb.h"

namespace weft::osd {

absl::Status OsdError(pb::OsdErrorCode code, absl::string_view message);
// The OSD code a status carries, or OSD_OK.
pb::OsdErrorCode OsdErrorCodeOf(const absl::Status& status);
// Writes `status` to the wire, keeping an OSD code if it carries one.
void FillStatus(const absl::Status& status, pb::Status* out);

}  // namespace weft::osd
