// Extended attribute names as Linux sorts them into namespaces, and what a
// read of an absent one answers. The MDS enforces the rules
// (mds/ops/xattr.cc); the client answers some absent names itself
// (FileSystemClient::Getxattr), so both classify names here.
#pragma once

#include <cstddef>

#include "absl/strings/string_view.h"

namespace weft::posix {

inline constexpr size_t kXattrNameMax = 255;

enum class XattrNs { kUser, kTrusted, kSecurity, kAcl, kWeft, kUnsupported };

// user., trusted., security., the two POSIX ACL names, weft. (virtual).
XattrNs XattrNamespace(absl::string_view name);

// 1 to kXattrNameMax bytes without NUL (the MDS refuses others: ERANGE for
// the length, EINVAL for a NUL).
bool XattrNameValid(absl::string_view name);

// Reading an absent attribute of `ns` is ENODATA for every caller, whatever
// the inode's mode: anyone may read security.* and the ACLs, and trusted.*
// is ENODATA to non-root callers too. (user.* can be EACCES; weft.* is
// virtual.)
bool AbsentReadsAsNoData(XattrNs ns);

}  // namespace weft::posix
