#include "common/posix/xattr.h"

#include "absl/strings/match.h"
#include "common/posix/acl.h"

namespace weft::posix {

XattrNs XattrNamespace(absl::string_view name) {
  if (absl::StartsWith(name, "user.")) return XattrNs::kUser;
  if (absl::StartsWith(name, "trusted.")) return XattrNs::kTrusted;
  if (absl::StartsWith(name, "security.")) return XattrNs::kSecurity;
  if (name == kXattrPosixAclAccess || name == kXattrPosixAclDefault) return XattrNs::kAcl;
  if (absl::StartsWith(name, "weft.")) return XattrNs::kWeft;
  return XattrNs::kUnsupported;
}

bool XattrNameValid(absl::string_view name) {
  return !name.empty() && name.size() <= kXattrNameMax &&
         name.find('\0') == absl::string_view::npos;
}

bool AbsentReadsAsNoData(XattrNs ns) {
  return ns == XattrNs::kSecurity || ns == XattrNs::kTrusted || ns == XattrNs::kAcl;
}

}  // namespace weft::posix
